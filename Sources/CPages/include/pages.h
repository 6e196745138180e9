// The pages of code and constants unmapped (pages.c).
#include <stddef.h>

/// Opens /proc/self/pagemap for the rounds to come; call before PR_SET_DUMPABLE 0. -1 when it cannot.
int parlour_pages_prepare(void);

/// Unmaps (MADV_DONTNEED) the present pages of every loaded object's read-only segments (code and
/// constants) that are still the file's. Returns how many bytes were unmapped; `refused` is how
/// many ranges the kernel refused, or -1 when pagemap was never opened (nothing was done).
size_t parlour_unmap_code(int *refused);

/// Gives the heap's free pages back to the kernel, in every arena (malloc_trim(0), which Swift's
/// Glibc module does not declare). Returns 1 when some memory was released.
int parlour_trim_heap(void);
