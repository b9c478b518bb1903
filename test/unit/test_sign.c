/*
** test/unit/test_sign.c - lib/sign's key files (issue 25): a key pair made
** by sign_keygen read back by sign_key_read (the same public key), the
** public key's text form both ways, and what sign_key_read refuses: a
** file others may read, a damaged or short file, a symbolic link, a
** missing file.  Without libsodium: every call says so.
*/
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sign/sign.h"

static char dir[64];

static void path_of(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", dir, name); }

static void write_file(const char *p, const char *text, mode_t mode) {
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  chmod(p, mode);
}

START_TEST(test_roundtrip) {
  char key[128], err[512];
  uint8_t pk[SIGN_PK_BYTES], pk2[SIGN_PK_BYTES], seed[SIGN_SEED_BYTES];
  path_of(key, sizeof key, "a.key");
  if (!sign_available()) {
    ck_assert_int_eq(sign_keygen(key, pk, err, sizeof err), SIGN_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "libsodium"));
    ck_assert_int_eq(sign_key_read(key, seed, pk2, err, sizeof err), SIGN_EUNSUPPORTED);
    return;
  }
  ck_assert_int_eq(sign_keygen(key, pk, err, sizeof err), SIGN_OK);
  ck_assert_int_eq(sign_key_read(key, seed, pk2, err, sizeof err), SIGN_OK);
  ck_assert_mem_eq(pk, pk2, SIGN_PK_BYTES);
  char pub[73];
  sign_pub_format(pk, pub);
  ck_assert_int_eq(sign_pub_parse(pub, strlen(pub), pk2, err, sizeof err), SIGN_OK);
  ck_assert_mem_eq(pk, pk2, SIGN_PK_BYTES);
  char pubfile[140], text[200];
  snprintf(pubfile, sizeof pubfile, "%s.pub", key);
  FILE *f = fopen(pubfile, "r");
  ck_assert_ptr_nonnull(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  ck_assert_int_eq(sign_pub_parse(text, n, pk2, err, sizeof err), SIGN_OK); /* (its newline allowed) */
  ck_assert_mem_eq(pk, pk2, SIGN_PK_BYTES);
  ck_assert_int_eq(sign_keygen(key, pk2, err, sizeof err), SIGN_EEXISTS);
  /* the public key's text: upper-case hex read too; anything else refused */
  for (char *c = pub + 8; *c; c++) *c = (char)(*c >= 'a' ? *c - 32 : *c);
  ck_assert_int_eq(sign_pub_parse(pub, strlen(pub), pk2, err, sizeof err), SIGN_OK);
  ck_assert_mem_eq(pk, pk2, SIGN_PK_BYTES);
  ck_assert_int_eq(sign_pub_parse(pub, 71, pk2, err, sizeof err), SIGN_ECORRUPT);
  pub[20] = 'g';
  ck_assert_int_eq(sign_pub_parse(pub, strlen(pub), pk2, err, sizeof err), SIGN_ECORRUPT);
  ck_assert_int_eq(sign_pub_parse("ed25519:", 8, pk2, err, sizeof err), SIGN_ECORRUPT);
}
END_TEST

START_TEST(test_refused) {
  if (!sign_available()) return;
  char key[128], err[512], p[128];
  uint8_t pk[SIGN_PK_BYTES], seed[SIGN_SEED_BYTES];
  path_of(key, sizeof key, "b.key");
  ck_assert_int_eq(sign_keygen(key, pk, err, sizeof err), SIGN_OK);
  chmod(key, 0640);
  ck_assert_int_eq(sign_key_read(key, seed, pk, err, sizeof err), SIGN_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "must be 0600"));
  path_of(p, sizeof p, "short.key");
  write_file(p, "ed25519-seed:00ff\n", 0600);
  ck_assert_int_eq(sign_key_read(p, seed, pk, err, sizeof err), SIGN_ECORRUPT);
  write_file(p, "ed25519:0000000000000000000000000000000000000000000000000000000000000000\n", 0600);
  ck_assert_int_eq(sign_key_read(p, seed, pk, err, sizeof err), SIGN_ECORRUPT); /* (a public key, not a secret) */
  write_file(p, "", 0600);
  ck_assert_int_eq(sign_key_read(p, seed, pk, err, sizeof err), SIGN_ECORRUPT);
  path_of(p, sizeof p, "link.key");
  chmod(key, 0600);
  ck_assert_int_eq(symlink(key, p), 0);
  ck_assert_int_eq(sign_key_read(p, seed, pk, err, sizeof err), SIGN_EIO);
  ck_assert_ptr_nonnull(strstr(err, "symbolic link"));
  path_of(p, sizeof p, "none.key");
  ck_assert_int_eq(sign_key_read(p, seed, pk, err, sizeof err), SIGN_EIO);
}
END_TEST

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/h5mem_test_sign_XXXXXX");
  if (!mkdtemp(dir)) return 1;
  Suite *s = suite_create("sign");
  TCase *tc = tcase_create("sign");
  tcase_add_test(tc, test_roundtrip);
  tcase_add_test(tc, test_refused);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) failed++;
  return failed ? 1 : 0;
}
