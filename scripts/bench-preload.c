/*
 * Preloaded by scripts/bench.py into the processes it measures (LD_PRELOAD), for two
 * things no outside tool gives cheaply:
 *
 * 1. Timestamps of the satellite's own I/O, to time it from inside without touching
 *    its code: every read() from the microphone's infile (the ALSA file plugin reads
 *    it inside snd_pcm_readi, on the capture thread, so that is the moment a period is
 *    captured), every send() (its first byte says which WebSocket frame it is), and
 *    every recv() on the /listen socket with its bytes (so the driver can find the one
 *    that brought a reply's last byte). Records go into a shared, memory-mapped file,
 *    so they survive the daemon's _exit and cost a clock read and a copy, no syscall
 *    (the process and thread ids are asked once a thread).
 *    Active only when PARLOUR_TRACE_FILE is set; PARLOUR_TRACE_INFILE names the infile.
 *
 * 2. A fix for valgrind 3.19 (Debian 12), which crashes on any Swift program with an
 *    async main: libdispatch parks the main thread in sigsuspend() with a mask in
 *    read-only memory, and valgrind writes into that mask. Handing sigsuspend a copy
 *    on the stack is enough.
 *
 * Easy to get wrong: the real functions come from dlsym(RTLD_NEXT); open() is variadic;
 * a descriptor number is reused after close(), so close() forgets it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum { TRACE_BYTES = 64 << 20, HEADER = 64, MAX_FD = 4096, RECV_KEEP = 65536 };
enum { KIND_OPEN_INFILE = 1, KIND_READ_INFILE = 2, KIND_SEND = 3, KIND_RECV = 4 };

/* One record; `data` bytes follow it (recv only), then padding to 8 bytes. */
struct record {
	uint64_t ns;
	int32_t pid, tid, fd, kind;
	int64_t bytes;     /* what the call returned */
	int32_t data;      /* bytes kept after the record */
	uint8_t first;     /* the first byte sent (0x81 text frame, 0x82 binary frame) */
	uint8_t pad[3];
};

static char *trace;            /* the mapped file; its first 8 bytes count the bytes used after HEADER */
static const char *infile;
static volatile char infile_fd[MAX_FD], listen_fd[MAX_FD];

static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_recv)(int, void *, size_t, int);
static int (*real_close)(int);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_open_2)(const char *, int);
static int (*real_sigsuspend)(const sigset_t *);

__attribute__((constructor)) static void setup(void)
{
	real_read = dlsym(RTLD_NEXT, "read");
	real_send = dlsym(RTLD_NEXT, "send");
	real_recv = dlsym(RTLD_NEXT, "recv");
	real_close = dlsym(RTLD_NEXT, "close");
	real_open = dlsym(RTLD_NEXT, "open");
	real_open64 = dlsym(RTLD_NEXT, "open64");
	real_openat = dlsym(RTLD_NEXT, "openat");
	real_openat64 = dlsym(RTLD_NEXT, "openat64");
	real_open_2 = dlsym(RTLD_NEXT, "__open_2");
	real_sigsuspend = dlsym(RTLD_NEXT, "sigsuspend");
	const char *path = getenv("PARLOUR_TRACE_FILE");
	infile = getenv("PARLOUR_TRACE_INFILE");
	if (!path)
		return;
	int fd = real_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (ftruncate(fd, TRACE_BYTES) == 0) {
		void *map = mmap(NULL, TRACE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map != MAP_FAILED)
			trace = map;
	}
	real_close(fd);
}

/* getpid() and gettid() are system calls each: asked once a thread, not at every record, so that
 * the tracer adds no system call to the reads and sends it times. A forked child execs at once. */
static __thread int32_t thread_id, process_id;

static void note(int kind, int fd, int64_t bytes, uint8_t first, const void *data, int32_t keep)
{
	if (!trace)
		return;
	if (!thread_id) {
		thread_id = gettid();
		process_id = getpid();
	}
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	size_t size = (sizeof(struct record) + (size_t)keep + 7) & ~(size_t)7;
	uint64_t at = __atomic_fetch_add((uint64_t *)trace, size, __ATOMIC_RELAXED);
	if (HEADER + at + size > TRACE_BYTES)
		return; /* full: the driver sees the count run past the end and says so */
	struct record r = { (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, process_id, thread_id, fd, kind,
			    bytes, keep, first, { 0 } };
	memcpy(trace + HEADER + at, &r, sizeof r);
	if (keep)
		memcpy(trace + HEADER + at + sizeof r, data, (size_t)keep);
}

static int opened(const char *path, int fd)
{
	if (fd >= 0 && fd < MAX_FD) {
		infile_fd[fd] = 0;
		listen_fd[fd] = 0;
		if (infile && path && strcmp(path, infile) == 0) {
			infile_fd[fd] = 1;
			note(KIND_OPEN_INFILE, fd, 0, 0, NULL, 0);
		}
	}
	return fd;
}

#define MODE(flags) \
	mode_t mode = 0; \
	if ((flags) & (O_CREAT | O_TMPFILE)) { \
		va_list args; \
		va_start(args, flags); \
		mode = va_arg(args, mode_t); \
		va_end(args); \
	}

int open(const char *path, int flags, ...) { MODE(flags); return opened(path, real_open(path, flags, mode)); }
int open64(const char *path, int flags, ...) { MODE(flags); return opened(path, real_open64(path, flags, mode)); }
int openat(int dir, const char *path, int flags, ...) { MODE(flags); return opened(path, real_openat(dir, path, flags, mode)); }
int openat64(int dir, const char *path, int flags, ...) { MODE(flags); return opened(path, real_openat64(dir, path, flags, mode)); }
/* What a fortified open() without a mode becomes (libasound opens the infile so). */
int __open_2(const char *path, int flags) { return opened(path, real_open_2(path, flags)); }

int close(int fd)
{
	if (fd >= 0 && fd < MAX_FD) {
		infile_fd[fd] = 0;
		listen_fd[fd] = 0;
	}
	return real_close(fd);
}

ssize_t read(int fd, void *buffer, size_t size)
{
	ssize_t got = real_read(fd, buffer, size);
	if (fd >= 0 && fd < MAX_FD && infile_fd[fd] && got > 0)
		note(KIND_READ_INFILE, fd, got, 0, NULL, 0);
	return got;
}

ssize_t send(int fd, const void *buffer, size_t size, int flags)
{
	/* The handshake marks the /listen socket, so that its recv()s are kept. */
	if (fd >= 0 && fd < MAX_FD && size >= 11 && memcmp(buffer, "GET /listen", 11) == 0)
		listen_fd[fd] = 1;
	ssize_t sent = real_send(fd, buffer, size, flags);
	if (sent > 0)
		note(KIND_SEND, fd, sent, ((const uint8_t *)buffer)[0], NULL, 0);
	return sent;
}

ssize_t recv(int fd, void *buffer, size_t size, int flags)
{
	ssize_t got = real_recv(fd, buffer, size, flags);
	if (fd >= 0 && fd < MAX_FD && listen_fd[fd] && got > 0)
		note(KIND_RECV, fd, got, 0, buffer, got < RECV_KEEP ? (int32_t)got : RECV_KEEP);
	return got;
}

int sigsuspend(const sigset_t *mask)
{
	sigset_t copy = *mask;
	return real_sigsuspend(&copy);
}
