// libwebsockets for Swift: the WebSocket client behind the /listen stream
// (Debian's libcurl has no WebSocket support). LWS_PRE is a macro built from
// another macro, which Swift cannot import, so it is a function here.
#include <libwebsockets.h>

/// The bytes lws needs free in front of every buffer passed to lws_write.
static inline size_t cws_pre(void) { return LWS_PRE; }
