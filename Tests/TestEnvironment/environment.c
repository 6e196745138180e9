/*
 * The test process's environment, made ready before any thread starts.
 *
 * A few tests must set an environment variable while other tests run
 * (ALSAFixture's ALSA_CONFIG_PATH, the first time it is needed; a TLS test's
 * SSL_CERT_FILE). glibc's setenv of a variable that is not there yet grows
 * the environ array with realloc and frees the old one, and a thread copying
 * the environment meanwhile (Foundation's Process.run, starting a tool)
 * read freed memory: the whole test process crashed in a CI run
 * (memcpy in Process.run, from TestServer.start). A variable that is already
 * there is replaced in place, one pointer stored, the old string kept. So
 * both are put there now, at load, with the values they would have anyway.
 */
#include <stdlib.h>

#include "test_environment.h"

__attribute__((constructor)) static void parlour_test_environment(void) {
    /* ALSA's own default: the same configuration as with no variable. */
    setenv("ALSA_CONFIG_PATH", "/usr/share/alsa/alsa.conf", 0);
    /* OpenSSL's default CA file on Debian, the same store as with no variable. */
    setenv("SSL_CERT_FILE", "/usr/lib/ssl/cert.pem", 0);
}

int parlour_test_environment_ready(void) {
    return getenv("ALSA_CONFIG_PATH") != NULL && getenv("SSL_CERT_FILE") != NULL;
}
