// The C side of webrtc_audio.h: WebRTC's AudioProcessing with its echo canceller
// (extended filter, at the suppression asked) and adaptive digital gain, each
// only when asked. Noise suppression is the project's own (SatelliteCore's
// NoiseSuppressor says why). Not delay-agnostic: the reference comes aligned by
// the satellite's own measurement, and a fresh canceller that looked for a
// delay of its own cancelled about 22 dB for an answer's first second, with
// bursts of none, where one that trusts the alignment had 30 dB within half a
// second (BENCHMARKS.md, "A room with an echo").
#include "webrtc_audio.h"

#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <webrtc/modules/interface/module_common_types.h>
#include <cstring>
#include <new>

struct parlour_apm {
    webrtc::AudioProcessing *apm;
    webrtc::AudioFrame frame;
};

static const int kRate = 16000;
static const size_t kSamples = 160;

extern "C" parlour_apm *parlour_apm_create(int echo_cancel, int auto_gain) {
    if (!echo_cancel && !auto_gain) return nullptr;
    webrtc::Config config;
    config.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(true));
    config.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(false));
    webrtc::AudioProcessing *apm = webrtc::AudioProcessing::Create(config);
    if (!apm) return nullptr;
    bool ok = apm->high_pass_filter()->Enable(true) == 0;
    if (echo_cancel) {
        ok = ok && apm->echo_cancellation()->Enable(true) == 0;
        webrtc::EchoCancellation::SuppressionLevel level = echo_cancel >= 3 ? webrtc::EchoCancellation::kHighSuppression
            : echo_cancel == 2 ? webrtc::EchoCancellation::kModerateSuppression : webrtc::EchoCancellation::kLowSuppression;
        ok = ok && apm->echo_cancellation()->set_suppression_level(level) == 0;
    }
    if (auto_gain) {
        ok = ok && apm->gain_control()->set_mode(webrtc::GainControl::kAdaptiveDigital) == 0;
        ok = ok && apm->gain_control()->Enable(true) == 0;
    }
    parlour_apm *state = ok ? new (std::nothrow) parlour_apm : nullptr;
    if (!state) {
        delete apm;
        return nullptr;
    }
    state->apm = apm;
    return state;
}

extern "C" void parlour_apm_destroy(parlour_apm *state) {
    if (!state) return;
    delete state->apm;
    delete state;
}

static void fill(webrtc::AudioFrame &frame, const int16_t *samples) {
    frame.sample_rate_hz_ = kRate;
    frame.num_channels_ = 1;
    frame.samples_per_channel_ = kSamples;
    std::memcpy(frame.data_, samples, kSamples * sizeof(int16_t));
}

extern "C" int parlour_apm_far(parlour_apm *state, const int16_t *samples) {
    fill(state->frame, samples);
    return state->apm->ProcessReverseStream(&state->frame);
}

extern "C" int parlour_apm_near(parlour_apm *state, int16_t *samples, int delay_ms) {
    fill(state->frame, samples);
    state->apm->set_stream_delay_ms(delay_ms);
    int result = state->apm->ProcessStream(&state->frame);
    if (result == 0) std::memcpy(samples, state->frame.data_, kSamples * sizeof(int16_t));
    return result;
}
