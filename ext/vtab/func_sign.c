/*
** ext/vtab/func_sign.c - signing keys from SQL (issue 25; docs/SQL.md,
** "Signing keys"):
**
**   h5mem_keygen(path)   a new Ed25519 key pair: the secret key in path
**                        (mode 0600), the public key in path.pub; never
**                        over a file that exists.  The result is the
**                        public key, "ed25519:<64 hex>".
**   h5mem_sign(table [, key_file])
**                        sign the store now, hashing every record again
**                        (and its checkpoints from then on) with the
**                        secret key file; the result is the signed
**                        checkpoint's number.
**   h5mem_verify(table_or_path [, public_key [, seen_seq]])
**                        check the store's signatures and records: JSON
**                        (docs/SQL.md, "Signed checkpoints").
**   h5mem_writer(table, writer [, tool])
**                        who this connection's writes are by, recorded
**                        in each record's history (docs/SQL.md,
**                        "Provenance").
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "../ext.h"
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

/* The store's error rc as the function's: "who: message". */
static void fn_store_err(sqlite3_context *ctx, const char *who, store *st, int rc) {
  char *err = NULL;
  rc = h5mem_store_err(st, rc, &err);
  ext_result_msg(ctx, rc, who, err);
}

static void fn_sign(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_sign");
  if (!vt) return;
  store *st = h5mem_table_store(vt);
  const char *path = argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : NULL;
  if (argc > 1 && (sqlite3_value_type(argv[1]) != SQLITE_TEXT || !path || !*path))
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_sign", sqlite3_mprintf("expected the secret key file's path (text)"));
  if (h5mem_store_holds(h5mem_table_ms(vt)))
    return sqlite3_result_error(ctx, "h5mem_sign: the table is being read by a query", -1);
  int rc = store_sign_now(st, path);
  if (rc) return fn_store_err(ctx, "h5mem_sign", st, rc);
  int64_t seq = store_sign_seq(st);
  if (seq <= 0) return fn_store_err(ctx, "h5mem_sign", st, seq < 0 ? (int)-seq : STORE_ECORRUPT);
  sqlite3_result_int64(ctx, seq);
}

/* A public key given as its text or as the path of a .pub file. */
static int pub_arg(sqlite3_value *v, uint8_t pk[SIGN_PK_BYTES], char *err, size_t errlen) {
  const char *t = (const char *)sqlite3_value_text(v);
  if (sqlite3_value_type(v) != SQLITE_TEXT || !t) {
    snprintf(err, errlen, "the public key is text: 'ed25519:<64 hex>' or a .pub file's path");
    return SIGN_EINVAL;
  }
  if (!strncmp(t, "ed25519:", 8)) return sign_pub_parse(t, strlen(t), pk, err, errlen);
  FILE *f = fopen(t, "rb");
  if (!f) {
    snprintf(err, errlen, "public key %s: cannot read it", t);
    return SIGN_EIO;
  }
  char buf[256];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return sign_pub_parse(buf, n, pk, err, errlen);
}

static void fn_verify(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (!ext_direct_call(ctx, "h5mem_verify")) return;
  const char *name = (const char *)sqlite3_value_text(argv[0]);
  if (sqlite3_value_type(argv[0]) != SQLITE_TEXT || !name || !*name)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_verify", sqlite3_mprintf("expected a table's name or a store file's path"));
  uint8_t pk[SIGN_PK_BYTES];
  char err[600];
  int have_pk = argc > 1 && sqlite3_value_type(argv[1]) != SQLITE_NULL;
  if (have_pk && pub_arg(argv[1], pk, err, sizeof err) != SIGN_OK)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_verify", sqlite3_mprintf("%s", err));
  int64_t seen = 0;
  if (argc > 2 && sqlite3_value_type(argv[2]) != SQLITE_NULL) {
    if (sqlite3_value_type(argv[2]) != SQLITE_INTEGER || sqlite3_value_int64(argv[2]) < 0)
      return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_verify",
                            sqlite3_mprintf("seen_seq: expected a signed checkpoint's number (an integer >= 0)"));
    seen = sqlite3_value_int64(argv[2]);
  }
  /* a table of this connection (its unsigned log read from its handle), or a file */
  registry *reg = sqlite3_user_data(ctx);
  char *m = NULL;
  int prc = SQLITE_OK;
  memvt *vt = h5mem_table(reg, sqlite3_context_db_handle(ctx), name, &m, &prc);
  sqlite3_free(m);
  m = NULL;
  store *tail = NULL, *own = NULL;
  const char *path = name;
  if (vt) {
    tail = h5mem_table_store(vt);
    if (store_is_ephemeral(tail))
      return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_verify",
                            sqlite3_mprintf("%s is an ephemeral table: it has no file, and is not signed", name));
    int rc = h5mem_store_refresh(h5mem_table_ms(vt), 0, &m);
    if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, "h5mem_verify", m);
    path = store_path(tail);
  } else {
    struct stat sb;
    if (stat(name, &sb) != 0)
      return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_verify",
                            sqlite3_mprintf("no h5mem table or store file named '%s'", name));
    store_opts o;
    memset(&o, 0, sizeof o);
    o.no_create = 1;
    if (store_open(name, &o, 1, &own, err, sizeof err) == STORE_OK) tail = own; /* (else no log to report) */
  }
  strbuf sb = {0};
  int rc = store_verify(path, have_pk ? pk : NULL, seen, tail, &sb, err, sizeof err);
  store_close(own);
  if (rc) {
    strbuf_free(&sb);
    return ext_result_msg(ctx, ext_err_rc(rc), "h5mem_verify", sqlite3_mprintf("%s", err));
  }
  sqlite3_result_text(ctx, sb.buf, (int)sb.len, SQLITE_TRANSIENT);
  strbuf_free(&sb);
}

/* h5mem_writer(table, writer [, tool]): who this connection's writes are
** by, in a store with provenance (NULL: the store's agent again). */
static void fn_writer(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_writer");
  if (!vt) return;
  store *st = h5mem_table_store(vt);
  for (int i = 1; i < argc; i++)
    if (sqlite3_value_type(argv[i]) != SQLITE_NULL && sqlite3_value_type(argv[i]) != SQLITE_TEXT)
      return ext_result_msg(ctx, SQLITE_MISMATCH, "h5mem_writer", sqlite3_mprintf("the %s is text or NULL",
                                                                                  i == 1 ? "writer" : "tool"));
  if (!store_has_provenance(st))
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_writer",
                          sqlite3_mprintf("%s keeps no provenance (make it with provenance=on)", store_path(st)));
  const char *w = (const char *)sqlite3_value_text(argv[1]);
  const char *t = argc > 2 ? (const char *)sqlite3_value_text(argv[2]) : NULL;
  int rc = store_prov_set(st, w, t);
  if (rc) return fn_store_err(ctx, "h5mem_writer", st, rc);
  if (w) sqlite3_result_text(ctx, w, -1, SQLITE_TRANSIENT);
  else sqlite3_result_null(ctx);
}

int h5mem_sign_register(sqlite3 *db, registry *reg) {
  /* (they write or read files: never from a trigger, view or schema) */
  int rc = h5mem_registry_function(db, reg, "h5mem_keygen", 1, SQLITE_DIRECTONLY, fn_keygen);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_sign", 1, SQLITE_DIRECTONLY, fn_sign);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_sign", 2, SQLITE_DIRECTONLY, fn_sign);
  for (int n = 1; n <= 3 && rc == SQLITE_OK; n++)
    rc = h5mem_registry_function(db, reg, "h5mem_verify", n, SQLITE_DIRECTONLY, fn_verify);
  for (int n = 2; n <= 3 && rc == SQLITE_OK; n++) /* (it says who writes: never from a schema's trigger) */
    rc = h5mem_registry_function(db, reg, "h5mem_writer", n, SQLITE_DIRECTONLY, fn_writer);
  return rc;
}
