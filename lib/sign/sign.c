/*
** lib/sign/sign.c - Ed25519 key files through libsodium (sign.h).
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sign.h"

#ifdef HAVE_LIBSODIUM
#include <sodium.h>
#endif

#define SEED_TAG "ed25519-seed:"
#define PUB_TAG "ed25519:"

static void hex(const uint8_t *b, size_t n, char *out) {
  static const char d[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = d[b[i] >> 4];
    out[2 * i + 1] = d[b[i] & 15];
  }
}

static int nibble(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* 2n hex digits at s into n bytes: 0, or -1 for anything else. */
static int unhex(const char *s, size_t n, uint8_t *out) {
  for (size_t i = 0; i < n; i++) {
    int h = nibble(s[2 * i]), l = nibble(s[2 * i + 1]);
    if (h < 0 || l < 0) return -1;
    out[i] = (uint8_t)(h << 4 | l);
  }
  return 0;
}

/* The length of text without the white space that ends it (a file's newline). */
static size_t trimmed(const char *text, size_t n) {
  while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' ' || text[n - 1] == '\t')) n--;
  return n;
}

void sign_pub_format(const uint8_t pk[SIGN_PK_BYTES], char out[73]) {
  memcpy(out, PUB_TAG, 8);
  hex(pk, SIGN_PK_BYTES, out + 8);
  out[72] = 0;
}

int sign_pub_parse(const char *text, size_t n, uint8_t pk[SIGN_PK_BYTES], char *err, size_t errlen) {
  n = trimmed(text, n);
  if (n != 8 + 2 * SIGN_PK_BYTES || memcmp(text, PUB_TAG, 8) || unhex(text + 8, SIGN_PK_BYTES, pk)) {
    snprintf(err, errlen, "not an Ed25519 public key: expected \"ed25519:\" and 64 hex digits");
    return SIGN_ECORRUPT;
  }
  return SIGN_OK;
}

#ifdef HAVE_LIBSODIUM

int sign_available(void) { return sodium_init() >= 0; }

/* path made (never over a file or through a link), n bytes of text
** written and synced; a failure removes it. */
static int write_new(const char *path, mode_t mode, const char *text, size_t n, char *err, size_t errlen) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    int e = errno;
    snprintf(err, errlen, e == EEXIST ? "%s exists already (a key file is never overwritten)" : "%s: %s", path,
             strerror(e));
    return e == EEXIST ? SIGN_EEXISTS : SIGN_EIO;
  }
  size_t done = 0;
  int e = 0;
  while (done < n && !e) {
    ssize_t w = write(fd, text + done, n - done);
    if (w > 0) done += (size_t)w;
    else if (w < 0 && errno != EINTR) e = errno;
  }
  if (!e && fsync(fd) != 0) e = errno;
  if (close(fd) != 0 && !e) e = errno;
  if (!e) return SIGN_OK;
  unlink(path);
  snprintf(err, errlen, "%s: %s", path, strerror(e));
  return util_err_write(e);
}

int sign_keygen(const char *path, uint8_t pk[SIGN_PK_BYTES], char *err, size_t errlen) {
  if (sodium_init() < 0) {
    snprintf(err, errlen, "libsodium could not start");
    return SIGN_EUNSUPPORTED;
  }
  size_t n = strlen(path);
  char *pub = malloc(n + 5);
  if (!pub) {
    snprintf(err, errlen, "out of memory");
    return SIGN_ENOMEM;
  }
  memcpy(pub, path, n);
  memcpy(pub + n, ".pub", 5);
  struct stat st;
  int rc = SIGN_OK;
  if (lstat(pub, &st) == 0) { /* (checked first, so that a refusal makes nothing) */
    snprintf(err, errlen, "%s exists already (a key file is never overwritten)", pub);
    rc = SIGN_EEXISTS;
  }
  uint8_t seed[SIGN_SEED_BYTES], sk[crypto_sign_SECRETKEYBYTES];
  char line[sizeof SEED_TAG + 2 * SIGN_SEED_BYTES + 1], pline[74];
  if (rc == SIGN_OK) {
    randombytes_buf(seed, sizeof seed);
    crypto_sign_seed_keypair(pk, sk, seed);
    size_t t = strlen(SEED_TAG);
    memcpy(line, SEED_TAG, t);
    hex(seed, sizeof seed, line + t);
    line[t + 2 * sizeof seed] = '\n';
    sign_pub_format(pk, pline);
    pline[72] = '\n';
    rc = write_new(path, 0600, line, t + 2 * sizeof seed + 1, err, errlen);
    if (rc == SIGN_OK && (rc = write_new(pub, 0644, pline, 73, err, errlen)) != SIGN_OK) unlink(path);
  }
  sodium_memzero(seed, sizeof seed);
  sodium_memzero(sk, sizeof sk);
  sodium_memzero(line, sizeof line);
  free(pub);
  return rc;
}

int sign_key_read(const char *path, uint8_t seed[SIGN_SEED_BYTES], uint8_t pk[SIGN_PK_BYTES], char *err,
                  size_t errlen) {
  if (sodium_init() < 0) {
    snprintf(err, errlen, "libsodium could not start");
    return SIGN_EUNSUPPORTED;
  }
  /* (non-blocking: a FIFO at the path must not hang a checkpoint; a regular file is required below) */
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    snprintf(err, errlen, "%s: %s", path,
             errno == ELOOP ? "a symbolic link (a key file is never read through one)" : strerror(errno));
    return SIGN_EIO;
  }
  struct stat st;
  char buf[128];
  ssize_t got = -1;
  int rc = SIGN_OK;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s is not a regular file", path);
    rc = SIGN_EIO;
  } else if (st.st_mode & 077) {
    snprintf(err, errlen, "%s may be read by others (mode %03o): a secret key file must be 0600", path,
             (unsigned)(st.st_mode & 0777));
    rc = SIGN_EINVAL;
  } else if ((got = read(fd, buf, sizeof buf)) < 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    rc = SIGN_EIO;
  }
  close(fd);
  size_t t = strlen(SEED_TAG);
  size_t n = rc == SIGN_OK ? trimmed(buf, (size_t)got) : 0;
  if (rc == SIGN_OK && (n != t + 2 * SIGN_SEED_BYTES || memcmp(buf, SEED_TAG, t) || unhex(buf + t, SIGN_SEED_BYTES, seed))) {
    snprintf(err, errlen, "%s is not an h5mem secret key (expected \"" SEED_TAG "\" and 64 hex digits)", path);
    rc = SIGN_ECORRUPT;
  }
  if (rc == SIGN_OK) {
    uint8_t sk[crypto_sign_SECRETKEYBYTES];
    crypto_sign_seed_keypair(pk, sk, seed);
    sodium_memzero(sk, sizeof sk);
  }
  sodium_memzero(buf, sizeof buf);
  return rc;
}

int sign_detached(const uint8_t seed[SIGN_SEED_BYTES], const uint8_t *msg, size_t n, uint8_t sig[SIGN_SIG_BYTES]) {
  if (sodium_init() < 0) return SIGN_EUNSUPPORTED;
  uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_seed_keypair(pk, sk, seed);
  int rc = crypto_sign_detached(sig, NULL, msg, n, sk) == 0 ? SIGN_OK : SIGN_EINVAL;
  sodium_memzero(sk, sizeof sk);
  return rc;
}

int sign_check(const uint8_t pk[SIGN_PK_BYTES], const uint8_t *msg, size_t n, const uint8_t sig[SIGN_SIG_BYTES]) {
  if (sodium_init() < 0) return SIGN_EUNSUPPORTED;
  return crypto_sign_verify_detached(sig, msg, n, pk) == 0 ? SIGN_OK : SIGN_ECORRUPT;
}

void sign_wipe(void *p, size_t n) { sodium_memzero(p, n); }

#else /* no libsodium */

#define NO_SODIUM "signing needs libsodium, which this build of h5mem has not (install libsodium-dev and build again)"

int sign_available(void) { return 0; }

int sign_keygen(const char *path, uint8_t pk[SIGN_PK_BYTES], char *err, size_t errlen) {
  (void)path, (void)pk;
  snprintf(err, errlen, NO_SODIUM);
  return SIGN_EUNSUPPORTED;
}

int sign_key_read(const char *path, uint8_t seed[SIGN_SEED_BYTES], uint8_t pk[SIGN_PK_BYTES], char *err,
                  size_t errlen) {
  (void)path, (void)seed, (void)pk;
  snprintf(err, errlen, NO_SODIUM);
  return SIGN_EUNSUPPORTED;
}

int sign_detached(const uint8_t seed[SIGN_SEED_BYTES], const uint8_t *msg, size_t n, uint8_t sig[SIGN_SIG_BYTES]) {
  (void)seed, (void)msg, (void)n, (void)sig;
  return SIGN_EUNSUPPORTED;
}

int sign_check(const uint8_t pk[SIGN_PK_BYTES], const uint8_t *msg, size_t n, const uint8_t sig[SIGN_SIG_BYTES]) {
  (void)pk, (void)msg, (void)n, (void)sig;
  return SIGN_EUNSUPPORTED;
}

void sign_wipe(void *p, size_t n) {
  volatile uint8_t *v = p;
  while (n--) *v++ = 0;
}

#endif
