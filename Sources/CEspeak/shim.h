// espeak-ng for Swift: the satellite's own voice when the house cannot be reached.
// Its classic API (speak_lib.h) is enough: synchronous synthesis into a callback.
#include <espeak-ng/speak_lib.h>
