// The pages of code and constants handed to the kernel to reclaim (pages.c).
#include <stddef.h>

/// Advises MADV_PAGEOUT for the whole pages of every loaded object's read-only segments (code
/// and constants). Returns how many bytes were advised; `refused` is how many segments the
/// kernel refused (a kernel before 5.4 refuses them all).
size_t parlour_page_out_code(int *refused);
