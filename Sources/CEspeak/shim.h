// espeak-ng for Swift: the satellite's own voice when the house cannot be reached.
// Its classic API (speak_lib.h) is enough: synchronous synthesis into a callback.
//
// The library is opened with dlopen when the notice is first needed, not linked:
// libespeak-ng pulls in libpcaudio and PulseAudio with its codecs (about 10 MiB;
// PulseAudio also looks for a sound server, which main.swift points at none),
// none of which a satellite that reaches its house ever uses. The package still
// depends on it.
#include <dlfcn.h>
#include <stddef.h>
#include <espeak-ng/speak_lib.h>

// The calls OfflineVoice makes. __typeof__ keeps each signature speak_lib.h's own
// without referring to the symbol, so nothing links against the library.
typedef struct {
    void *library;
    __typeof__(&espeak_Initialize) initialize;
    __typeof__(&espeak_SetSynthCallback) setSynthCallback;
    __typeof__(&espeak_SetVoiceByName) setVoiceByName;
    __typeof__(&espeak_Synth) synth;
    __typeof__(&espeak_Terminate) terminate;
} parlour_espeak;

// Opens libespeak-ng.so.1 and finds the calls; on failure returns dlerror()'s words.
static inline const char *parlour_espeak_open(parlour_espeak *api) {
    api->library = dlopen("libespeak-ng.so.1", RTLD_NOW | RTLD_LOCAL);
    if (api->library == NULL) return dlerror();
    api->initialize = (__typeof__(api->initialize))dlsym(api->library, "espeak_Initialize");
    api->setSynthCallback = (__typeof__(api->setSynthCallback))dlsym(api->library, "espeak_SetSynthCallback");
    api->setVoiceByName = (__typeof__(api->setVoiceByName))dlsym(api->library, "espeak_SetVoiceByName");
    api->synth = (__typeof__(api->synth))dlsym(api->library, "espeak_Synth");
    api->terminate = (__typeof__(api->terminate))dlsym(api->library, "espeak_Terminate");
    if (!api->initialize || !api->setSynthCallback || !api->setVoiceByName || !api->synth || !api->terminate) {
        const char *error = dlerror();
        dlclose(api->library);
        api->library = NULL;
        return error != NULL ? error : "a call is missing from libespeak-ng.so.1";
    }
    return NULL;
}

static inline void parlour_espeak_close(parlour_espeak *api) {
    if (api->library != NULL) dlclose(api->library);
    api->library = NULL;
}
