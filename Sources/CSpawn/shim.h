// posix_spawn's one glibc extension the satellite needs, which Swift cannot see:
// glibc declares posix_spawn_file_actions_addclosefrom_np (2.34+) only under
// _GNU_SOURCE. A hook must not inherit the daemon's sockets and devices, and not
// every library opens its descriptors close-on-exec, so the child closes them all.
#include <spawn.h>

extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
