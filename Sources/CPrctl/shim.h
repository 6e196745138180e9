// prctl(2) for Swift, which cannot call a variadic C function: the one use the
// daemon has, PR_SET_DUMPABLE 0, as an inline wrapper with fixed arguments.
#include <sys/prctl.h>

static inline int parlour_set_undumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }
