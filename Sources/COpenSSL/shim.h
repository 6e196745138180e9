// OpenSSL for Swift: the SHA-256 of a certificate's public key (its DER
// SubjectPublicKeyInfo), which is what pin.json's "key" pins; and the macros
// an https or wss connection (ClientConnection) needs, as functions Swift can call.
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

/// Writes the SHA-256 of `cert`'s public key into `digest` (32 bytes); 0 on success.
static inline int copenssl_spki_sha256(X509 *cert, unsigned char digest[32]) {
    unsigned char *der = NULL;
    int length = cert ? i2d_X509_PUBKEY(X509_get_X509_PUBKEY(cert), &der) : -1;
    if (length <= 0) return -1;
    unsigned int size = 0;
    int ok = EVP_Digest(der, (size_t)length, digest, &size, EVP_sha256(), NULL);
    OPENSSL_free(der);
    return ok == 1 && size == 32 ? 0 : -1;
}

/// The same for a certificate in PEM text (a test compares a certificate file with what was pinned); 0 on success.
static inline int copenssl_pem_spki_sha256(const char *pem, unsigned char digest[32]) {
    BIO *bio = BIO_new_mem_buf(pem, -1);
    if (!bio) return -1;
    X509 *cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!cert) return -1;
    int result = copenssl_spki_sha256(cert, digest);
    X509_free(cert);
    return result;
}

/// SNI: the name the server is asked for (SSL_set_tlsext_host_name is a macro).
static inline int copenssl_set_server_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

/// SSL_write may write part of a buffer, and be called again with the rest from another address (macros too).
static inline void copenssl_allow_partial_writes(SSL *ssl) {
    SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

/// No TLS 1.2 renegotiation (SSL_OP_NO_RENEGOTIATION is a macro of a macro).
static inline void copenssl_refuse_renegotiation(SSL_CTX *context) { SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION); }

/// The SHA-256 of the public key the server showed in the handshake; 0 on success.
static inline int copenssl_peer_spki_sha256(SSL *ssl, unsigned char digest[32]) {
    X509 *cert = SSL_get1_peer_certificate(ssl);
    int result = copenssl_spki_sha256(cert, digest);
    X509_free(cert);
    return result;
}
