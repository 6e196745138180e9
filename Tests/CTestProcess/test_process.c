#include "test_process.h"
#include <sys/syscall.h>
#include <unistd.h>

int test_pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
