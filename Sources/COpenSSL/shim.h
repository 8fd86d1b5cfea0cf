#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rsa.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/core_names.h>
#include <openssl/param_build.h>
#include <openssl/err.h>
#include <openssl/pem.h>

/*
 * Public keys are built here rather than in Swift because OSSL_PARAM_BLD and
 * EVP_PKEY_CTX keep the *pointers* of parameter names and key-type names
 * (they expect string literals); a Swift String passed as `const char *` is
 * a temporary that would dangle. Both return NULL on any failure and leave
 * the OpenSSL error queue for the caller to clear.
 */
static inline EVP_PKEY *registry_public_key_from_params(const char *type, OSSL_PARAM_BLD *builder) {
    EVP_PKEY *key = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(builder);
    EVP_PKEY_CTX *context = params ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
    if (context && EVP_PKEY_fromdata_init(context) == 1
        && EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) {
        key = NULL;
    }
    EVP_PKEY_CTX_free(context);
    OSSL_PARAM_free(params);
    return key;
}

/* An RSA public key from big-endian modulus and exponent. */
static inline EVP_PKEY *registry_rsa_public_key(const unsigned char *modulus, size_t modulus_length,
                                                const unsigned char *exponent, size_t exponent_length) {
    if (modulus_length > INT_MAX || exponent_length > INT_MAX) return NULL;
    EVP_PKEY *key = NULL;
    BIGNUM *n = BN_bin2bn(modulus, (int)modulus_length, NULL);
    BIGNUM *e = BN_bin2bn(exponent, (int)exponent_length, NULL);
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    if (n && e && builder
        && OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_N, n) == 1
        && OSSL_PARAM_BLD_push_BN(builder, OSSL_PKEY_PARAM_RSA_E, e) == 1) {
        key = registry_public_key_from_params("RSA", builder);
    }
    OSSL_PARAM_BLD_free(builder);
    BN_free(n);
    BN_free(e);
    return key;
}

/* A P-256 public key from an uncompressed SEC1 point (0x04 || x || y). */
static inline EVP_PKEY *registry_p256_public_key(const unsigned char *point, size_t point_length) {
    EVP_PKEY *key = NULL;
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    if (builder
        && OSSL_PARAM_BLD_push_utf8_string(builder, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1
        && OSSL_PARAM_BLD_push_octet_string(builder, OSSL_PKEY_PARAM_PUB_KEY, point, point_length) == 1) {
        key = registry_public_key_from_params("EC", builder);
    }
    OSSL_PARAM_BLD_free(builder);
    return key;
}

/*
 * An HMAC-SHA-256 context keyed with `key`, for EVP_MAC_CTX_dup (the
 * "digest" parameter's name must outlive the OSSL_PARAM, hence C). NULL on
 * any failure, with the OpenSSL error queue left for the caller to clear.
 */
static inline EVP_MAC_CTX *registry_hmac_sha256_context(const unsigned char *key, size_t key_length) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *context = mac ? EVP_MAC_CTX_new(mac) : NULL;
    EVP_MAC_free(mac); /* the context holds its own reference */
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
        OSSL_PARAM_construct_end(),
    };
    if (context && EVP_MAC_init(context, key, key_length, params) != 1) {
        EVP_MAC_CTX_free(context);
        context = NULL;
    }
    return context;
}

/*
 * Refuses an encrypted PEM key: without a callback, OpenSSL would prompt for
 * its passphrase on the terminal and block the process.
 */
static inline int registry_no_passphrase(char *buffer, int size, int writing, void *userdata) {
    (void)buffer; (void)size; (void)writing; (void)userdata;
    return -1;
}

/*
 * The first private key in PEM text (PKCS#8 or a traditional format), or
 * NULL, with the OpenSSL error queue left for the caller to clear.
 */
static inline EVP_PKEY *registry_private_key_from_pem(const unsigned char *pem, size_t length) {
    if (length > INT_MAX) return NULL;
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (!bio) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, registry_no_passphrase, NULL);
    BIO_free(bio);
    return key;
}
