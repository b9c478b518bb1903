/*
** lib/sign/sign.h - Ed25519 keys for signed checkpoints (issue 25),
** through libsodium; nothing cryptographic is written here.
**
** Key files (docs/SQL.md, "Signing keys"): the secret key is one line,
** "ed25519-seed:" then the 32-byte seed in 64 lowercase hex digits, in a
** file of mode 0600; the public key, in the file of the same name plus
** ".pub", is "ed25519:" then its 32 bytes in 64 hex digits.  The seed is
** what PyNaCl's SigningKey and libsodium's crypto_sign_seed_keypair take.
**
** A build without libsodium (./configure found none) has every function
** but sign_available answer SIGN_EUNSUPPORTED with a message saying so.
*/
#ifndef H5MEM_SIGN_H
#define H5MEM_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

enum {
  SIGN_OK = UTIL_OK,
  SIGN_EIO = UTIL_EIO,
  SIGN_ENOMEM = UTIL_ENOMEM,
  SIGN_ECORRUPT = UTIL_ECORRUPT,
  SIGN_EUNSUPPORTED = UTIL_EUNSUPPORTED,
  SIGN_EINVAL = UTIL_EINVAL,
  SIGN_EEXISTS = UTIL_EEXISTS
};

#define SIGN_PK_BYTES 32
#define SIGN_SEED_BYTES 32
#define SIGN_SIG_BYTES 64

/* Whether this build signs (it has libsodium). */
int sign_available(void);

/* A new key pair: the secret key written to path and the public key to
** path + ".pub", each created (never through a link, never over a file
** that exists: SIGN_EEXISTS), written and synced; the public key also into
** pk.  A failure leaves neither file. */
int sign_keygen(const char *path, uint8_t pk[SIGN_PK_BYTES], char *err, size_t errlen);

/* The secret key file at path read: its seed, and the public key it makes
** (SIGN_ECORRUPT: not a key file; SIGN_EIO: unreadable; a file that others
** may read is refused as well, SIGN_EINVAL). */
int sign_key_read(const char *path, uint8_t seed[SIGN_SEED_BYTES], uint8_t pk[SIGN_PK_BYTES], char *err,
                  size_t errlen);

/* A public key file ("ed25519:<hex>") or the text itself read into pk. */
int sign_pub_parse(const char *text, size_t n, uint8_t pk[SIGN_PK_BYTES], char *err, size_t errlen);

/* The Ed25519 signature of msg (n bytes) by the key of seed. */
int sign_detached(const uint8_t seed[SIGN_SEED_BYTES], const uint8_t *msg, size_t n, uint8_t sig[SIGN_SIG_BYTES]);
/* Whether sig is pk's signature of msg: SIGN_OK, or SIGN_ECORRUPT when it is not. */
int sign_check(const uint8_t pk[SIGN_PK_BYTES], const uint8_t *msg, size_t n, const uint8_t sig[SIGN_SIG_BYTES]);
/* Zero n bytes at p (a seed read), in a way the compiler keeps. */
void sign_wipe(void *p, size_t n);

/* pk as "ed25519:<64 hex>" (72 characters and a NUL). */
void sign_pub_format(const uint8_t pk[SIGN_PK_BYTES], char out[73]);

#endif
