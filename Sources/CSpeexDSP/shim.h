// speexdsp for Swift: the echo canceller, the preprocessor (noise suppression,
// automatic gain) and the resampler. Swift imports these headers as they are.
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
#include <speex/speex_resampler.h>
