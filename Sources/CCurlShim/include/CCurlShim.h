// Typed wrappers for libcurl's variadic calls, which Swift cannot import.
// One function per argument type; nothing else belongs here.
#ifndef RECEIPTFLEET_CCURLSHIM_H
#define RECEIPTFLEET_CCURLSHIM_H

#include <curl/curl.h>

CURLcode rf_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode rf_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode rf_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode rf_curl_setopt_write_callback(CURL *handle, CURLoption option,
                                       size_t (*callback)(char *, size_t, size_t, void *));
CURLcode rf_curl_setopt_opensocket_callback(CURL *handle, CURLoption option, curl_opensocket_callback callback);
CURLcode rf_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode rf_curl_getinfo_double(CURL *handle, CURLINFO info, double *value);
CURLcode rf_curl_getinfo_string(CURL *handle, CURLINFO info, const char **value);

#endif
