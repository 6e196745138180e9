// For tests: a process's pidfd (pidfd_open, Linux 5.3), which Swift's Glibc
// module does not declare (glibc 2.36 has it only behind <sys/pidfd.h>, and
// syscall() is variadic). It becomes readable when the process ends, child of
// ours or not, so a test awaits a grandchild's end rather than polling /proc.
#include <sys/types.h>

/// A pidfd for `pid`, close-on-exec; -1 with errno (ESRCH: no such process, it has been reaped).
int test_pidfd_open(pid_t pid);
