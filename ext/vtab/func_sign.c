/*
** ext/vtab/func_sign.c - signing keys from SQL (issue 25; docs/SQL.md,
** "Signing keys"):
**
**   h5mem_keygen(path)   a new Ed25519 key pair: the secret key in path
**                        (mode 0600), the public key in path.pub; never
**                        over a file that exists.  The result is the
**                        public key, "ed25519:<64 hex>".
*/
#include "config.h"

#include <string.h>

#include "../ext_err.h"
#include "sign/sign.h"
#include "vtab_int.h"

static void fn_keygen(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  const char *path = (const char *)sqlite3_value_text(argv[0]);
  if (sqlite3_value_type(argv[0]) != SQLITE_TEXT || !path || !*path)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_keygen",
                          sqlite3_mprintf("expected the secret key file's path (text)"));
  uint8_t pk[SIGN_PK_BYTES];
  char err[600], pub[73];
  int rc = sign_keygen(path, pk, err, sizeof err);
  if (rc != SIGN_OK) return ext_result_msg(ctx, ext_err_rc(rc), "h5mem_keygen", sqlite3_mprintf("%s", err));
  sign_pub_format(pk, pub);
  sqlite3_result_text(ctx, pub, -1, SQLITE_TRANSIENT);
}

int h5mem_sign_register(sqlite3 *db, registry *reg) {
  /* (it writes files: never from a trigger, view or schema) */
  return h5mem_registry_function(db, reg, "h5mem_keygen", 1, SQLITE_DIRECTONLY, fn_keygen);
}
