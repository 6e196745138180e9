#ifndef PARLOUR_TEST_ENVIRONMENT_H
#define PARLOUR_TEST_ENVIRONMENT_H

/* 1 when the variables tests set at run time were there from the start (environment.c says why). */
int parlour_test_environment_ready(void);

/* Names a child the test process started and that must not outlive it (children.c says why). */
void parlour_test_child_started(int pid);

#endif
