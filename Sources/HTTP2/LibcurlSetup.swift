import CCurl
import Glibc

/// libcurl's process-wide setup, done once, before the first handle.
///
/// `SSLKEYLOGFILE` is removed from the environment first, and never
/// restored: libcurl built with OpenSSL reads it in `curl_global_init`
/// (`Curl_tls_keylog_open`, through `getenv`) and then appends the secrets
/// of every TLS session it opens to that file. Whoever could set the
/// variable for the server (an environment file, a wrapper script) would
/// read every provider connection: the APNs provider tokens, FCM's access
/// tokens, the payloads and device tokens. Removing it before libcurl is
/// initialised means the file is never opened. registryd initialises
/// libcurl nowhere else; this holds only while that stays so.
let curlGlobalInit: CURLcode = {
    unsetenv("SSLKEYLOGFILE")
    return curl_global_init(Int(CURL_GLOBAL_ALL))
}()
