// OpenSSL for Swift, for one thing: the SHA-256 of a certificate's public key
// (its DER SubjectPublicKeyInfo), which is what pin.json's "key" and curl's
// CURLOPT_PINNEDPUBLICKEY pin. libcurl and libwebsockets already link it.
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

/// The same for a certificate in PEM text (as curl's CURLINFO_CERTINFO gives it); 0 on success.
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

/// In a verification callback: the SHA-256 of the certificate being checked, and its depth (0: the server's own).
static inline int copenssl_store_spki_sha256(void *store, unsigned char digest[32], int *depth) {
    X509_STORE_CTX *ctx = (X509_STORE_CTX *)store;
    *depth = X509_STORE_CTX_get_error_depth(ctx);
    return copenssl_spki_sha256(X509_STORE_CTX_get_current_cert(ctx), digest);
}

/// In a verification callback: overrules OpenSSL's verdict on the certificate being checked.
static inline void copenssl_store_accept(void *store) { X509_STORE_CTX_set_error((X509_STORE_CTX *)store, X509_V_OK); }
