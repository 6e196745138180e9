// The pages of code and constants the daemon has mapped, handed to the kernel
// to reclaim (Satellite/System/ResidentPages.swift says when and why). In C
// because Swift's Glibc module has no dl_iterate_phdr (it wants _GNU_SOURCE,
// which a header Swift imports cannot set). MADV_PAGEOUT, not MADV_DONTNEED:
// it never loses a byte (a page the process has its own copy of, such as a
// debugger's breakpoint, a text relocation or a uprobe, is left or swapped,
// never dropped), and it skips a page another process maps too, so what it
// frees is memory, not only a figure in /proc. dl_iterate_phdr holds the
// loader's list lock, so no object is unmapped while its segments are advised.
#define _GNU_SOURCE
#include "pages.h"

#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21 // Linux 5.4; older kernels refuse it with EINVAL
#endif

struct parlour_pages {
    uintptr_t page;
    uintptr_t vdso;
    size_t advised;
    int refused;
};

static int parlour_pages_object(struct dl_phdr_info *info, size_t size, void *data) {
    struct parlour_pages *pages = data;
    (void)size;
    // The vDSO is the kernel's, not a file's.
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        uintptr_t from = info->dlpi_addr + segment->p_vaddr;
        if (segment->p_type == PT_LOAD && pages->vdso >= from && pages->vdso < from + segment->p_memsz) return 0;
    }
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        // Code and constants only: a writable segment's pages are the process's data.
        if (segment->p_type != PT_LOAD || (segment->p_flags & PF_W)) continue;
        // Whole pages of what the file holds: not one shared with a neighbouring segment,
        // nor the tail past p_filesz that the loader zeroes.
        uintptr_t start = (info->dlpi_addr + segment->p_vaddr + pages->page - 1) & ~(pages->page - 1);
        uintptr_t end = (info->dlpi_addr + segment->p_vaddr + segment->p_filesz) & ~(pages->page - 1);
        if (end <= start) continue;
        if (madvise((void *)start, end - start, MADV_PAGEOUT) == 0) {
            pages->advised += end - start;
        } else {
            pages->refused += 1;
        }
    }
    return 0;
}

size_t parlour_page_out_code(int *refused) {
    struct parlour_pages pages = { (uintptr_t)sysconf(_SC_PAGESIZE), (uintptr_t)getauxval(AT_SYSINFO_EHDR), 0, 0 };
    dl_iterate_phdr(parlour_pages_object, &pages);
    *refused = pages.refused;
    return pages.advised;
}
