/*
 * The test process's long-lived children (daemons, servers, rooms) die with it.
 *
 * A harness stops its child when the test ends, but a test process that
 * crashed stops nothing: its daemons and servers, reparented to init, kept
 * swift-test's output pipe open, and swift-test waited for them for good (a
 * CI run hung after the crash ControlLoopTests' flood caused). So a watcher
 * is forked here, at load, before any thread starts. It holds nothing of the
 * test process's but a pipe, on which each harness names its child (its pid
 * and start time) once it runs; when the pipe ends, the test process has
 * gone, however it went, and the watcher kills each child that is still the
 * same process (the start time tells a reused pid), with its process group.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_environment.h"

struct child {
    int pid;
    unsigned long long started;
};

static int named = -1;

/* Field 22 of /proc/PID/stat, the start time; 0 when the process is not there. */
static unsigned long long start_time(int pid) {
    char path[64], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    /* The name in brackets may hold spaces; the fields count from after its last ')'. */
    char *at = strrchr(text, ')');
    if (!at) return 0;
    unsigned long long value = 0;
    for (int field = 2; at && field < 22; field++) at = strchr(at + 1, ' ');
    if (at) value = strtoull(at + 1, NULL, 10);
    return value;
}

static void watch(int from) {
    struct child *children = NULL;
    size_t count = 0, room = 0;
    struct child next;
    ssize_t n;
    while ((n = read(from, &next, sizeof next)) != 0) {
        if (n < 0) continue; /* EINTR */
        if (n != sizeof next) continue;
        if (count == room) {
            room = room ? room * 2 : 64;
            struct child *grown = realloc(children, room * sizeof *children);
            if (!grown) break;
            children = grown;
        }
        children[count++] = next;
    }
    for (size_t i = 0; i < count; i++) {
        if (children[i].started == 0 || start_time(children[i].pid) != children[i].started) continue;
        kill(-children[i].pid, SIGKILL);
        kill(children[i].pid, SIGKILL);
    }
    _exit(0);
}

__attribute__((constructor)) static void parlour_test_children(void) {
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0) return;
    pid_t pid = fork();
    if (pid < 0) {
        close(ends[0]);
        close(ends[1]);
        return;
    }
    if (pid == 0) {
        /* Nothing of the test process's open, its output pipes least of all, but the pipe. */
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        dup2(ends[0], 3);
        close_range(4, ~0U, 0);
        watch(3);
    }
    close(ends[0]);
    named = ends[1];
}

void parlour_test_child_started(int pid) {
    if (named < 0) return;
    struct child child = {pid, start_time(pid)};
    /* Smaller than PIPE_BUF: one write, whole, whoever else writes. */
    (void)!write(named, &child, sizeof child);
}
