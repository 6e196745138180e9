// libcurl for Swift. curl_easy_setopt, curl_easy_getinfo and curl_share_setopt are
// variadic, which Swift cannot call, so each argument type gets a small typed wrapper
// here. Debian's libcurl4 speaks TLS through OpenSSL (libcurl4-openssl-dev), so the
// SSL_CTX its CURLOPT_SSL_CTX_FUNCTION hands over is OpenSSL's, and libssl is mapped
// with libcurl anyway: ccurl_check_names holds the certificate's names to a stricter
// rule than curl's own check, which falls back to the subject's CN.
#include <curl/curl.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

static inline CURLcode curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_write(CURL *h, CURLoption o, size_t (*f)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, o, f); }
static inline CURLcode curl_setopt_opensocket(CURL *h, curl_opensocket_callback f) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, f); }
static inline CURLcode curl_setopt_prereq(CURL *h, curl_prereq_callback f) { return curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, f); }
static inline CURLcode curl_setopt_ssl_ctx(CURL *h, curl_ssl_ctx_callback f) { return curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, f); }
static inline CURLcode curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode curl_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode curl_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode curl_getinfo_certinfo(CURL *h, struct curl_certinfo **v) { return curl_easy_getinfo(h, CURLINFO_CERTINFO, v); }
static inline CURLSHcode curl_share_data(CURLSH *s, curl_lock_data d) { return curl_share_setopt(s, CURLSHOPT_SHARE, d); }

/// Makes the chain's check also require the certificate to name `host` (an address when
/// `is_address`), with no partial wildcard (f*.example.com) and never by the subject's CN.
/// Called from CURLOPT_SSL_CTX_FUNCTION, before the connection's SSL is made from `ctx`.
/// 0 when set.
static inline int ccurl_check_names(void *ctx, const char *host, int is_address) {
    X509_VERIFY_PARAM *param = SSL_CTX_get0_param((SSL_CTX *)ctx);
    if (param == NULL) return -1;
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    int set = is_address ? X509_VERIFY_PARAM_set1_ip_asc(param, host) : X509_VERIFY_PARAM_set1_host(param, host, 0);
    return set == 1 ? 0 : -1;
}
