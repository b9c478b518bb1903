/*
** ext/vtab/vtab_args.c - the arguments of CREATE VIRTUAL TABLE ... USING
** module(arg, ...), as the h5 and h5mem tables take them: key=value pairs
** (values quoted as SQL strings or identifiers, or bare) and bare values.
*/
#include "config.h"

#include <string.h>

#include "vtab_int.h"

static int blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

char *ext_unquote(const char *s) {
  while (blank(*s)) s++;
  size_t n = strlen(s);
  while (n && blank(s[n - 1])) n--;
  char q = n >= 2 ? s[0] : 0;
  char e = q == '[' ? ']' : q;
  if (!(q == '\'' || q == '"' || q == '`' || q == '[') || s[n - 1] != e)
    return sqlite3_mprintf("%.*s", (int)n, s);
  char *r = sqlite3_malloc64(n);
  if (!r) return NULL;
  size_t j = 0;
  for (size_t i = 1; i + 1 < n; i++) {
    r[j++] = s[i];
    if (s[i] == e && q != '[' && i + 2 < n && s[i + 1] == e) i++; /* a doubled quote */
  }
  r[j] = 0;
  return r;
}

int ext_vtab_arg(const char *arg, const char **key, size_t *klen, char **value) {
  const char *eq = strchr(arg, '=');
  const char *q1 = strpbrk(arg, "'\"`[");
  *key = NULL;
  *klen = 0;
  if (eq && !(q1 && q1 < eq)) {
    const char *k = arg;
    while (blank(*k)) k++;
    size_t kl = (size_t)(eq - k);
    while (kl && blank(k[kl - 1])) kl--;
    *key = k;
    *klen = kl;
    arg = eq + 1;
  }
  *value = ext_unquote(arg);
  return *value ? SQLITE_OK : SQLITE_NOMEM;
}

int ext_key_is(const char *key, size_t klen, const char *name) {
  return klen == strlen(name) && sqlite3_strnicmp(key, name, (int)klen) == 0;
}

int ext_key_repeated(const char *key, size_t klen, const char *const *names, unsigned *seen) {
  for (unsigned i = 0; names[i]; i++) {
    for (const char *n = names[i]; *n;) {
      size_t len = strcspn(n, "|");
      if (len == klen && sqlite3_strnicmp(key, n, (int)len) == 0) {
        int again = (*seen >> i) & 1;
        *seen |= 1u << i;
        return again;
      }
      n += len + (n[len] == '|');
    }
  }
  return 0;
}

int ext_vtab_declare_new(sqlite3 *db, const char *schema, size_t size, sqlite3_vtab **out,
                         const char *who, char **pzErr) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc != SQLITE_OK) {
    *pzErr = sqlite3_mprintf("%s: cannot declare columns: %s", who, sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_vtab *vt = sqlite3_malloc64(size);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, size);
  *out = vt;
  return SQLITE_OK;
}

int ext_tvf_connect(sqlite3 *db, void *aux, const void *kind, const char *schema, const char *who,
                    sqlite3_vtab **out, char **pzErr) {
  int rc = ext_vtab_declare_new(db, schema, sizeof(ext_tvf), out, who, pzErr);
  if (rc != SQLITE_OK) return rc;
  ext_tvf *vt = (ext_tvf *)*out;
  vt->db = db;
  vt->aux = aux;
  vt->kind = kind;
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  return SQLITE_OK;
}

int ext_tvf_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt->zErrMsg);
  sqlite3_free(vt);
  return SQLITE_OK;
}
