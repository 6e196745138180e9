// OpenSSL opened on first use: include/tls.h says why and what. The table is
// this file's alone, so every caller sees the one filled by parlour_tls_open.
#include "tls.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// __typeof__ keeps each signature OpenSSL's own without referring to the symbol, so nothing links against it.
typedef struct {
    const char *error;
    __typeof__(&ERR_clear_error) ERR_clear_error;
    __typeof__(&ERR_get_error) ERR_get_error;
    __typeof__(&ERR_error_string_n) ERR_error_string_n;
    __typeof__(&TLS_client_method) TLS_client_method;
    __typeof__(&SSL_CTX_new) SSL_CTX_new;
    __typeof__(&SSL_CTX_free) SSL_CTX_free;
    __typeof__(&SSL_CTX_ctrl) SSL_CTX_ctrl;
    __typeof__(&SSL_CTX_set_options) SSL_CTX_set_options;
    __typeof__(&SSL_CTX_set_default_verify_paths) SSL_CTX_set_default_verify_paths;
    __typeof__(&SSL_CTX_set_verify) SSL_CTX_set_verify;
    __typeof__(&SSL_new) SSL_new;
    __typeof__(&SSL_free) SSL_free;
    __typeof__(&SSL_ctrl) SSL_ctrl;
    __typeof__(&SSL_set_connect_state) SSL_set_connect_state;
    __typeof__(&SSL_set_fd) SSL_set_fd;
    __typeof__(&SSL_set1_host) SSL_set1_host;
    __typeof__(&SSL_get0_param) SSL_get0_param;
    __typeof__(&X509_VERIFY_PARAM_set_hostflags) X509_VERIFY_PARAM_set_hostflags;
    __typeof__(&SSL_connect) SSL_connect;
    __typeof__(&SSL_get_error) SSL_get_error;
    __typeof__(&SSL_get_verify_result) SSL_get_verify_result;
    __typeof__(&SSL_read) SSL_read;
    __typeof__(&SSL_write) SSL_write;
    __typeof__(&SSL_pending) SSL_pending;
    __typeof__(&SSL_shutdown) SSL_shutdown;
    __typeof__(&SSL_get1_peer_certificate) SSL_get1_peer_certificate;
    __typeof__(&X509_verify_cert_error_string) X509_verify_cert_error_string;
    __typeof__(&X509_free) X509_free;
    __typeof__(&X509_get_X509_PUBKEY) X509_get_X509_PUBKEY;
    __typeof__(&i2d_X509_PUBKEY) i2d_X509_PUBKEY;
    __typeof__(&EVP_Digest) EVP_Digest;
    __typeof__(&EVP_sha256) EVP_sha256;
    __typeof__(&CRYPTO_free) CRYPTO_free;
    __typeof__(&BIO_new_mem_buf) BIO_new_mem_buf;
    __typeof__(&BIO_free) BIO_free;
    __typeof__(&PEM_read_bio_X509) PEM_read_bio_X509;
} parlour_tls_api;

static parlour_tls_api parlour_tls_table;
static pthread_once_t parlour_tls_once = PTHREAD_ONCE_INIT;

static void parlour_tls_load(void) {
    parlour_tls_api *t = &parlour_tls_table;
    // libssl brings libcrypto in; both stay for the process's life.
    void *ssl = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
    void *crypto = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!ssl || !crypto) {
        // dlerror's text is glibc's, freed by the thread's next dl call: a copy of our own stays.
        static char why[512];
        const char *error = dlerror();
        snprintf(why, sizeof why, "%s", error ? error : "libssl.so.3 could not be opened");
        t->error = why;
        return;
    }
    int missing = 0;
#define PARLOUR_TLS_FIND(lib, name) \
    t->name = (__typeof__(t->name))dlsym(lib, #name); \
    if (!t->name) missing = 1;
    PARLOUR_TLS_FIND(crypto, ERR_clear_error)
    PARLOUR_TLS_FIND(crypto, ERR_get_error)
    PARLOUR_TLS_FIND(crypto, ERR_error_string_n)
    PARLOUR_TLS_FIND(ssl, TLS_client_method)
    PARLOUR_TLS_FIND(ssl, SSL_CTX_new)
    PARLOUR_TLS_FIND(ssl, SSL_CTX_free)
    PARLOUR_TLS_FIND(ssl, SSL_CTX_ctrl)
    PARLOUR_TLS_FIND(ssl, SSL_CTX_set_options)
    PARLOUR_TLS_FIND(ssl, SSL_CTX_set_default_verify_paths)
    PARLOUR_TLS_FIND(ssl, SSL_CTX_set_verify)
    PARLOUR_TLS_FIND(ssl, SSL_new)
    PARLOUR_TLS_FIND(ssl, SSL_free)
    PARLOUR_TLS_FIND(ssl, SSL_ctrl)
    PARLOUR_TLS_FIND(ssl, SSL_set_connect_state)
    PARLOUR_TLS_FIND(ssl, SSL_set_fd)
    PARLOUR_TLS_FIND(ssl, SSL_set1_host)
    PARLOUR_TLS_FIND(ssl, SSL_get0_param)
    PARLOUR_TLS_FIND(crypto, X509_VERIFY_PARAM_set_hostflags)
    PARLOUR_TLS_FIND(ssl, SSL_connect)
    PARLOUR_TLS_FIND(ssl, SSL_get_error)
    PARLOUR_TLS_FIND(ssl, SSL_get_verify_result)
    PARLOUR_TLS_FIND(ssl, SSL_read)
    PARLOUR_TLS_FIND(ssl, SSL_write)
    PARLOUR_TLS_FIND(ssl, SSL_pending)
    PARLOUR_TLS_FIND(ssl, SSL_shutdown)
    PARLOUR_TLS_FIND(ssl, SSL_get1_peer_certificate)
    PARLOUR_TLS_FIND(crypto, X509_verify_cert_error_string)
    PARLOUR_TLS_FIND(crypto, X509_free)
    PARLOUR_TLS_FIND(crypto, X509_get_X509_PUBKEY)
    PARLOUR_TLS_FIND(crypto, i2d_X509_PUBKEY)
    PARLOUR_TLS_FIND(crypto, EVP_Digest)
    PARLOUR_TLS_FIND(crypto, EVP_sha256)
    PARLOUR_TLS_FIND(crypto, CRYPTO_free)
    PARLOUR_TLS_FIND(crypto, BIO_new_mem_buf)
    PARLOUR_TLS_FIND(crypto, BIO_free)
    PARLOUR_TLS_FIND(crypto, PEM_read_bio_X509)
#undef PARLOUR_TLS_FIND
    if (missing) t->error = "a call is missing from libssl.so.3 or libcrypto.so.3";
}

/// Opens OpenSSL, once for the process; NULL when it is ready, else why not. Call before any `tls_` function.
const char *parlour_tls_open(void) {
    pthread_once(&parlour_tls_once, parlour_tls_load);
    return parlour_tls_table.error;
}

#define PARLOUR_TLS (&parlour_tls_table)

void tls_ERR_clear_error(void) { PARLOUR_TLS->ERR_clear_error(); }
unsigned long tls_ERR_get_error(void) { return PARLOUR_TLS->ERR_get_error(); }
void tls_ERR_error_string_n(unsigned long e, char *buf, size_t len) { PARLOUR_TLS->ERR_error_string_n(e, buf, len); }
SSL_CTX *tls_SSL_CTX_new_client(void) { return PARLOUR_TLS->SSL_CTX_new(PARLOUR_TLS->TLS_client_method()); }
void tls_SSL_CTX_free(SSL_CTX *c) { PARLOUR_TLS->SSL_CTX_free(c); }
/// TLS 1.2 or later (SSL_CTX_set_min_proto_version is a macro).
long tls_SSL_CTX_set_min_tls12(SSL_CTX *c) { return PARLOUR_TLS->SSL_CTX_ctrl(c, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL); }
int tls_SSL_CTX_set_default_verify_paths(SSL_CTX *c) { return PARLOUR_TLS->SSL_CTX_set_default_verify_paths(c); }
void tls_SSL_CTX_set_verify(SSL_CTX *c, int mode) { PARLOUR_TLS->SSL_CTX_set_verify(c, mode, NULL); }
/// No TLS 1.2 renegotiation: it could leave a write waiting on reads at any time.
void tls_SSL_CTX_refuse_renegotiation(SSL_CTX *c) { PARLOUR_TLS->SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION); }
SSL *tls_SSL_new(SSL_CTX *c) { return PARLOUR_TLS->SSL_new(c); }
void tls_SSL_free(SSL *s) { PARLOUR_TLS->SSL_free(s); }
void tls_SSL_set_connect_state(SSL *s) { PARLOUR_TLS->SSL_set_connect_state(s); }
int tls_SSL_set_fd(SSL *s, int fd) { return PARLOUR_TLS->SSL_set_fd(s, fd); }
/// SNI: the name the server is asked for (SSL_set_tlsext_host_name is a macro).
int tls_SSL_set_server_name(SSL *s, const char *name) {
    return (int)PARLOUR_TLS->SSL_ctrl(s, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (void *)name);
}
/// SSL_write may write part of a buffer, and be called again with the rest from another address (a macro too).
void tls_SSL_allow_partial_writes(SSL *s) {
    PARLOUR_TLS->SSL_ctrl(s, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
}
/// The certificate must name `host` in its subjectAltName, never only in the subject's CN (which
/// OpenSSL falls back to by default), and a wildcard stands for a whole label only: `*.example.com`,
/// never `f*.example.com`. An address is matched against the subjectAltName's addresses.
int tls_SSL_check_host(SSL *s, const char *host) {
    if (PARLOUR_TLS->SSL_set1_host(s, host) != 1) return 0;
    PARLOUR_TLS->X509_VERIFY_PARAM_set_hostflags(PARLOUR_TLS->SSL_get0_param(s),
        X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    return 1;
}
int tls_SSL_connect(SSL *s) { return PARLOUR_TLS->SSL_connect(s); }
int tls_SSL_get_error(const SSL *s, int result) { return PARLOUR_TLS->SSL_get_error(s, result); }
long tls_SSL_get_verify_result(const SSL *s) { return PARLOUR_TLS->SSL_get_verify_result(s); }
int tls_SSL_read(SSL *s, void *buf, int num) { return PARLOUR_TLS->SSL_read(s, buf, num); }
int tls_SSL_write(SSL *s, const void *buf, int num) { return PARLOUR_TLS->SSL_write(s, buf, num); }
int tls_SSL_pending(const SSL *s) { return PARLOUR_TLS->SSL_pending(s); }
int tls_SSL_shutdown(SSL *s) { return PARLOUR_TLS->SSL_shutdown(s); }
const char *tls_X509_verify_cert_error_string(long n) { return PARLOUR_TLS->X509_verify_cert_error_string(n); }

/// Writes the SHA-256 of `cert`'s public key into `digest` (32 bytes); 0 on success.
int tls_spki_sha256(X509 *cert, unsigned char digest[32]) {
    unsigned char *der = NULL;
    int length = cert ? PARLOUR_TLS->i2d_X509_PUBKEY(PARLOUR_TLS->X509_get_X509_PUBKEY(cert), &der) : -1;
    if (length <= 0) return -1;
    unsigned int size = 0;
    int ok = PARLOUR_TLS->EVP_Digest(der, (size_t)length, digest, &size, PARLOUR_TLS->EVP_sha256(), NULL);
    PARLOUR_TLS->CRYPTO_free(der, __FILE__, __LINE__);
    return ok == 1 && size == 32 ? 0 : -1;
}

/// The SHA-256 of the public key the server showed in the handshake; 0 on success.
int tls_peer_spki_sha256(SSL *s, unsigned char digest[32]) {
    X509 *cert = PARLOUR_TLS->SSL_get1_peer_certificate(s);
    int result = tls_spki_sha256(cert, digest);
    if (cert) PARLOUR_TLS->X509_free(cert);
    return result;
}

/// The same for a certificate in PEM text (a test compares a certificate file with what was pinned); 0 on success.
int tls_pem_spki_sha256(const char *pem, unsigned char digest[32]) {
    if (parlour_tls_open() != NULL) return -1;
    BIO *bio = PARLOUR_TLS->BIO_new_mem_buf(pem, -1);
    if (!bio) return -1;
    X509 *cert = PARLOUR_TLS->PEM_read_bio_X509(bio, NULL, NULL, NULL);
    PARLOUR_TLS->BIO_free(bio);
    if (!cert) return -1;
    int result = tls_spki_sha256(cert, digest);
    PARLOUR_TLS->X509_free(cert);
    return result;
}
