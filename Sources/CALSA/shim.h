// ALSA for Swift. Only what Swift cannot import by itself lives here.
#include <alsa/asoundlib.h>

// ALSA's library prints its own "ALSA lib ..." lines on stderr, which under
// systemd is the journal. The satellite reports every ALSA failure itself, with
// the device name and snd_strerror, so the library's lines are switched off.
// The handler is variadic, which Swift cannot define.
static void parlour_alsa_silent_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}

static inline void parlour_alsa_silence_library_errors(void) {
    snd_lib_error_set_handler(parlour_alsa_silent_handler);
}
