// ALSA for Swift. Only what Swift cannot import by itself lives here.
#include <alsa/asoundlib.h>
