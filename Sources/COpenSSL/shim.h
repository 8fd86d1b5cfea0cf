#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/err.h>

/* EVP_PKEY_PUBLIC_KEY is a composite macro that Swift does not import. */
static inline int registry_evp_pkey_public_key_selection(void) {
    return EVP_PKEY_PUBLIC_KEY;
}
