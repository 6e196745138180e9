// libavahi-client for Swift: browsing, resolving and publishing under a threaded poll.
// Declared without pkgConfig in Package.swift because avahi-client's .pc file
// asks for -D_REENTRANT, which SwiftPM refuses with a warning; the headers are
// in /usr/include and the libraries are linked from module.modulemap.
#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/alternative.h>
#include <avahi-common/address.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#include <avahi-common/timeval.h>
#include <avahi-common/watch.h>
