// WebRTC's audio processing (Debian's libwebrtc-audio-processing 0.3) behind a
// C API Swift can import: the library is C++ only. One state per microphone;
// every call with 10 ms (160 samples) of 16 kHz mono S16.
#ifndef PARLOUR_WEBRTC_AUDIO_H
#define PARLOUR_WEBRTC_AUDIO_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct parlour_apm parlour_apm;

/// A processor doing what is asked (each 0 or 1; `echo_cancel` 1, 2 or 3 for the canceller's low,
/// moderate or high suppression); NULL when none is asked or the library failed.
parlour_apm *parlour_apm_create(int echo_cancel, int auto_gain);
void parlour_apm_destroy(parlour_apm *apm);
/// What the speaker played, aligned with the next `parlour_apm_near` (silence when nothing plays).
int parlour_apm_far(parlour_apm *apm, const int16_t *samples);
/// What the microphone heard, processed in place; `delay_ms` is what is left of the delay between
/// the two after alignment (0 when aligned). 0 on success, the library's error otherwise.
int parlour_apm_near(parlour_apm *apm, int16_t *samples, int delay_ms);

#ifdef __cplusplus
}
#endif
#endif
