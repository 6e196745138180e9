// The read-only pages given back (pages.c).
#include <stddef.h>

/// Unmaps every page of the loaded objects' read-only segments (code and constants), and gives
/// the heap's free pages back (malloc_trim). Returns how many bytes of segments were advised;
/// `failures` is how many segments madvise refused.
size_t parlour_unmap_clean_pages(int *failures);
