// libcurl for Swift. curl_easy_setopt, curl_easy_getinfo and curl_share_setopt are
// variadic, which Swift cannot call, so each argument type gets a small typed wrapper here.
#include <curl/curl.h>

static inline CURLcode curl_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_setopt_write(CURL *h, size_t (*f)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, f); }
static inline CURLcode curl_setopt_progress(CURL *h, int (*f)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f); }
static inline CURLcode curl_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode curl_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode curl_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode curl_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode curl_getinfo_certinfo(CURL *h, struct curl_certinfo **v) { return curl_easy_getinfo(h, CURLINFO_CERTINFO, v); }
static inline CURLSHcode curl_share_data(CURLSH *s, curl_lock_data d) { return curl_share_setopt(s, CURLSHOPT_SHARE, d); }
