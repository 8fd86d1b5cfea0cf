#include <curl/curl.h>

/*
 * curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are C variadic
 * functions, which Swift cannot call: these typed helpers pass each kind of
 * argument libcurl expects for an option (a long, a pointer, a curl_off_t, a
 * callback), so the compiler checks what Swift hands over.
 */

static inline CURLcode registry_curl_easy_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

/* Strings (libcurl copies them), lists (libcurl keeps the pointer) and user data. */
static inline CURLcode registry_curl_easy_setopt_pointer(CURL *easy, CURLoption option, const void *value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode registry_curl_easy_setopt_off_t(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}

/* CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION share this type. */
static inline CURLcode registry_curl_easy_setopt_write_callback(CURL *easy, CURLoption option, curl_write_callback value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode registry_curl_easy_setopt_read_callback(CURL *easy, CURLoption option, curl_read_callback value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode registry_curl_easy_setopt_seek_callback(CURL *easy, CURLoption option, curl_seek_callback value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode registry_curl_easy_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

static inline CURLcode registry_curl_easy_getinfo_off_t(CURL *easy, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(easy, info, value);
}

/* CURLINFO_PRIVATE: the pointer given to CURLOPT_PRIVATE. */
static inline CURLcode registry_curl_easy_getinfo_pointer(CURL *easy, CURLINFO info, void **value) {
    return curl_easy_getinfo(easy, info, (char **)value);
}

static inline CURLMcode registry_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

/* The running libcurl's version and features (CURLVERSION_NOW is a macro Swift does not import). */
static inline curl_version_info_data *registry_curl_version(void) {
    return curl_version_info(CURLVERSION_NOW);
}

/* CURLOPT_PREREQFUNCTION: called once a request has its connection and stream, just before it is sent. */
static inline CURLcode registry_curl_easy_setopt_prereq_callback(CURL *easy, CURLoption option, curl_prereq_callback value) {
    return curl_easy_setopt(easy, option, value);
}
