// The pages of code and constants the daemon keeps mapped, given back to the
// page cache (Satellite/System/ResidentPages.swift says when and why). In C
// because Swift's Glibc module has no dl_iterate_phdr (it wants _GNU_SOURCE,
// which a header Swift imports cannot set), and because the walk must hold the
// loader's lock: no library is loaded or unloaded while its segments are
// advised, so an address read here is still what it was.
#define _GNU_SOURCE
#include "pages.h"

#include <link.h>
#include <malloc.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct parlour_pages {
    size_t page;
    size_t advised;
    int failures;
};

static int parlour_pages_object(struct dl_phdr_info *info, size_t size, void *data) {
    struct parlour_pages *pages = data;
    (void)size;
    // The vDSO is the kernel's, not a file's.
    if (info->dlpi_name && strstr(info->dlpi_name, "linux-vdso")) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        // Only segments never written: their pages are the file's, and the kernel maps them
        // again from the page cache when they are next read. A writable segment's pages may
        // be the process's own copies (relocations, data): dropping them would lose them.
        if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W)) continue;
        // Whole pages inside the segment: a page it shares with a writable neighbour stays.
        uintptr_t start = (info->dlpi_addr + segment->p_vaddr + pages->page - 1) & ~(uintptr_t)(pages->page - 1);
        uintptr_t end = (info->dlpi_addr + segment->p_vaddr + segment->p_memsz) & ~(uintptr_t)(pages->page - 1);
        if (end <= start) continue;
        if (madvise((void *)start, end - start, MADV_DONTNEED) == 0) {
            pages->advised += end - start;
        } else {
            pages->failures += 1;
        }
    }
    return 0;
}

size_t parlour_unmap_clean_pages(int *failures) {
    struct parlour_pages pages = { (size_t)sysconf(_SC_PAGESIZE), 0, 0 };
    dl_iterate_phdr(parlour_pages_object, &pages);
    malloc_trim(0);
    *failures = pages.failures;
    return pages.advised;
}
