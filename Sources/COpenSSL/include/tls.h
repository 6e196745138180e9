// OpenSSL for the /listen socket's TLS, opened with dlopen when the first wss
// connection is made (parlour_tls_open). libcurl, which the daemon links for
// HTTP, maps libssl and libcrypto anyway, so the lazy opening no longer saves
// memory; it only keeps OpenSSL's setup for the socket off a plain-http
// daemon's path, and linking it directly would remove the table. Each call the
// daemon makes is a `tls_` function here, through a table filled once; the
// macros (SNI, the write mode, renegotiation) are spelled as the calls they
// stand for. The SHA-256 of a certificate's public key (its DER
// SubjectPublicKeyInfo) is what pin.json's "key" pins.
#include <stddef.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

/// Opens OpenSSL, once for the process; NULL when it is ready, else why not. Call before any `tls_` function.
const char *parlour_tls_open(void);
void tls_ERR_clear_error(void);
unsigned long tls_ERR_get_error(void);
void tls_ERR_error_string_n(unsigned long e, char *buf, size_t len);
SSL_CTX *tls_SSL_CTX_new_client(void);
void tls_SSL_CTX_free(SSL_CTX *c);
/// TLS 1.2 or later (SSL_CTX_set_min_proto_version is a macro).
long tls_SSL_CTX_set_min_tls12(SSL_CTX *c);
int tls_SSL_CTX_set_default_verify_paths(SSL_CTX *c);
void tls_SSL_CTX_set_verify(SSL_CTX *c, int mode);
/// No TLS 1.2 renegotiation: it could leave a write waiting on reads at any time.
void tls_SSL_CTX_refuse_renegotiation(SSL_CTX *c);
SSL *tls_SSL_new(SSL_CTX *c);
void tls_SSL_free(SSL *s);
void tls_SSL_set_connect_state(SSL *s);
int tls_SSL_set_fd(SSL *s, int fd);
/// SNI: the name the server is asked for (SSL_set_tlsext_host_name is a macro).
int tls_SSL_set_server_name(SSL *s, const char *name);
/// SSL_write may write part of a buffer, and be called again with the rest from another address (a macro too).
void tls_SSL_allow_partial_writes(SSL *s);
/// The certificate must name `host` in its subjectAltName (never the subject's CN), with whole-label wildcards only.
int tls_SSL_check_host(SSL *s, const char *host);
int tls_SSL_connect(SSL *s);
int tls_SSL_get_error(const SSL *s, int result);
long tls_SSL_get_verify_result(const SSL *s);
int tls_SSL_read(SSL *s, void *buf, int num);
int tls_SSL_write(SSL *s, const void *buf, int num);
int tls_SSL_pending(const SSL *s);
int tls_SSL_shutdown(SSL *s);
const char *tls_X509_verify_cert_error_string(long n);
/// Writes the SHA-256 of `cert`'s public key into `digest` (32 bytes); 0 on success.
int tls_spki_sha256(X509 *cert, unsigned char digest[32]);
/// The SHA-256 of the public key the server showed in the handshake; 0 on success.
int tls_peer_spki_sha256(SSL *s, unsigned char digest[32]);
/// The same for a certificate in PEM text (a test compares a certificate file with what was pinned); 0 on success.
int tls_pem_spki_sha256(const char *pem, unsigned char digest[32]);
