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

#include <stdlib.h>
#include <string.h>

#include "../ext_err.h"
#include "sign/sign.h"
#include "store/store.h"
#include "util/strbuf.h"
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

/* WIP (branch wip/sign-leaves): every row's leaf, hex, as a JSON array,
** for the independent verifier's test. */
static void fn_leaves(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_leaves");
  if (!vt) return;
  store *st = h5mem_table_store(vt);
  char *err = NULL;
  int rc = h5mem_store_refresh(h5mem_table_ms(vt), 0, &err);
  if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, "h5mem_leaves", err);
  strbuf sb = {0};
  uint64_t n = store_npos(st);
  uint8_t *all = malloc((size_t)(n ? n : 1) * 32), root[32];
  if (!all) return sqlite3_result_error_nomem(ctx);
  strbuf_puts(&sb, "{\"leaves\":[");
  for (uint64_t pos = 0; pos < n; pos++) {
    uint8_t *leaf = all + pos * 32;
    int lr = store_leaf(st, pos, leaf);
    if (lr) {
      strbuf_free(&sb);
      free(all);
      return ext_result_msg(ctx, ext_err_rc(lr), "h5mem_leaves", sqlite3_mprintf("%s", store_errmsg(st)));
    }
    strbuf_puts(&sb, pos ? ",\"" : "\"");
    for (int i = 0; i < 32; i++) strbuf_printf(&sb, "%02x", leaf[i]);
    strbuf_puts(&sb, "\"");
  }
  int mr = store_merkle_root(all, n, root);
  free(all);
  if (mr) {
    strbuf_free(&sb);
    return ext_result_msg(ctx, ext_err_rc(mr), "h5mem_leaves", sqlite3_mprintf("no root"));
  }
  strbuf_puts(&sb, "],\"root\":\"");
  for (int i = 0; i < 32; i++) strbuf_printf(&sb, "%02x", root[i]);
  strbuf_puts(&sb, "\"}");
  if (strbuf_failed(&sb)) {
    strbuf_free(&sb);
    return sqlite3_result_error_nomem(ctx);
  }
  sqlite3_result_text(ctx, sb.buf, (int)sb.len, SQLITE_TRANSIENT);
  strbuf_free(&sb);
}

int h5mem_sign_register(sqlite3 *db, registry *reg) {
  int rc0 = h5mem_registry_function(db, reg, "h5mem_leaves", 1, SQLITE_DIRECTONLY, fn_leaves);
  if (rc0 != SQLITE_OK) return rc0;
  /* (it writes files: never from a trigger, view or schema) */
  return h5mem_registry_function(db, reg, "h5mem_keygen", 1, SQLITE_DIRECTONLY, fn_keygen);
}
