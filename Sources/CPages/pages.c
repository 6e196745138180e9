// The pages of code and constants the daemon has mapped, unmapped
// (Satellite/System/ResidentPages.swift says when and why). In C because
// Swift's Glibc module has no dl_iterate_phdr (it wants _GNU_SOURCE, which a
// header Swift imports cannot set).
//
// MADV_DONTNEED, page by page where /proc/self/pagemap shows the page is the
// file's: a page the process has its own copy of (a debugger's breakpoint, a
// uprobe, a text relocation) is skipped, since unmapping it would put the
// file's bytes back. Not MADV_PAGEOUT: for a file the caller does not own or
// may not write (every library and the program itself, under the unit's own
// user) the kernel pages out nothing and says nothing. The pages stay in the
// page cache, where the kernel may take them when memory is short. Not atomic:
// a page written between its pagemap entry being read and the madvise is lost.
// Under the unit only root can write there (a debugger, a uprobe), and a round
// takes milliseconds once an hour; the tests that write into code run alone.
// dl_iterate_phdr holds the loader's list lock, so no object is unmapped while
// its segments are read and advised.
#define _GNU_SOURCE
#include "pages.h"

#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

// Opened before the process is made undumpable: /proc/self then belongs to root, and a
// daemon of its own user could no longer open it. Reading an open one needs nothing more.
static int pagemap = -1;

int parlour_pages_prepare(void) {
    if (pagemap < 0) pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    return pagemap >= 0 ? 0 : -1;
}

struct parlour_pages {
    uintptr_t page;
    uintptr_t vdso;
    size_t advised;
    int refused;
};

// pagemap's bits: 63 the page is present, 61 it is a file's page (or shared anonymous memory).
#define PRESENT (1ULL << 63)
#define FILE_PAGE (1ULL << 61)

static void unmap_run(struct parlour_pages *pages, uintptr_t from, uintptr_t to) {
    if (to <= from) return;
    if (madvise((void *)from, to - from, MADV_DONTNEED) == 0) {
        pages->advised += to - from;
    } else {
        pages->refused += 1;
    }
}

// Unmaps the pages of [start, end) that are present and the file's, in runs.
static void unmap_file_pages(struct parlour_pages *pages, uintptr_t start, uintptr_t end) {
    uint64_t entries[512];
    uintptr_t run = 0;
    for (uintptr_t at = start; at < end;) {
        size_t count = (end - at) / pages->page;
        if (count > 512) count = 512;
        ssize_t got = pread(pagemap, entries, count * sizeof entries[0], (off_t)(at / pages->page * sizeof entries[0]));
        if (got <= 0) {
            pages->refused += 1;
            break;
        }
        count = (size_t)got / sizeof entries[0];
        for (size_t i = 0; i < count; i++, at += pages->page) {
            int file = (entries[i] & (PRESENT | FILE_PAGE)) == (PRESENT | FILE_PAGE);
            if (file && !run) run = at;
            if (!file && run) {
                unmap_run(pages, run, at);
                run = 0;
            }
        }
    }
    if (run) unmap_run(pages, run, end);
}

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
        if (end > start) unmap_file_pages(pages, start, end);
    }
    return 0;
}

size_t parlour_unmap_code(int *refused) {
    struct parlour_pages pages = { (uintptr_t)sysconf(_SC_PAGESIZE), (uintptr_t)getauxval(AT_SYSINFO_EHDR), 0, 0 };
    if (pagemap < 0) {
        *refused = -1;
        return 0;
    }
    dl_iterate_phdr(parlour_pages_object, &pages);
    *refused = pages.refused;
    return pages.advised;
}

int parlour_trim_heap(void) { return malloc_trim(0); }
