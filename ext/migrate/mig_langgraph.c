/*
** ext/migrate/mig_langgraph.c - the text LangGraph's SqliteStore embedded
** for a store_vectors row, rebuilt from the item's value and the row's
** field_name.
**
** LangGraph (langchain-ai/langgraph@b2926a0f, tag checkpointsqlite==3.1.1:
** libs/checkpoint/langgraph/store/base/embed.py, tokenize_path and
** get_text_at_path; libs/checkpoint-sqlite/langgraph/store/sqlite/base.py,
** _prepare_batch_PUT_queries) embeds, for each path of its index's
** text_fields (else "$"), the texts the path gives in the item's value:
**
**   - "$" (or an empty path): the whole value as Python's
**     json.dumps(value, sort_keys=True, ensure_ascii=False);
**   - tokens split at '.', with "[...]" and "{...}" whole tokens: "[n]"
**     an element (n < 0 from the end), "[*]" every element, "*" every
**     member or element, "{a,b.c}" each named member reached through
**     objects (and no further token), a name a member;
**   - where a path ends: a string itself, a number or boolean as Python's
**     str() writes it (3, 2.5, 1e-05, True), an array or object as
**     json.dumps above, null nothing.
**
** A path that gives one text names its vector with the path as written; one
** that gives n > 1 names them path.0 ... path.(n-1).  The values are
** stored by orjson (compact, keys in their order): the text is rebuilt
** by parsing the value and writing it as Python would.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mig.h"
#include "util/json.h"

/* The texts a path gives, collected (only the idx-th kept, or all counted). */
typedef struct lg_out {
  long want;         /* the index of the text wanted */
  long n;            /* texts so far */
  sqlite3_str *text; /* the wanted one, once found */
  int nomem;
} lg_out;

/* ---- Python's writing of values --------------------------------------- */

/* repr(float) of Python 3: the shortest digits that read back as d, in
** fixed notation (with ".0" when whole) when -4 < decpt <= 16, else
** d[.ddd]e+XX. */
static void py_float(sqlite3_str *o, double d) {
  if (isnan(d)) {
    sqlite3_str_appendall(o, "NaN");
    return;
  }
  if (isinf(d)) {
    sqlite3_str_appendall(o, d < 0 ? "-Infinity" : "Infinity");
    return;
  }
  char e[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(e, sizeof e, "%.*e", prec - 1, d);
    if (strtod(e, NULL) == d) break;
  }
  /* e: [-]D[.DDD]e(+|-)XX */
  const char *p = e;
  if (*p == '-') {
    sqlite3_str_appendchar(o, 1, '-');
    p++;
  }
  char dig[20];
  int nd = 0;
  for (; *p && *p != 'e'; p++)
    if (*p != '.') dig[nd++] = *p;
  int x = atoi(p + 1), decpt = x + 1;
  while (nd > 1 && dig[nd - 1] == '0') nd--; /* (the digits are the shortest: no zeros but a lone 0) */
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      sqlite3_str_appendall(o, "0.");
      sqlite3_str_appendchar(o, -decpt, '0');
      sqlite3_str_append(o, dig, nd);
    } else if (nd <= decpt) {
      sqlite3_str_append(o, dig, nd);
      sqlite3_str_appendchar(o, decpt - nd, '0');
      sqlite3_str_appendall(o, ".0");
    } else {
      sqlite3_str_append(o, dig, decpt);
      sqlite3_str_appendchar(o, 1, '.');
      sqlite3_str_append(o, dig + decpt, nd - decpt);
    }
  } else {
    sqlite3_str_append(o, dig, 1);
    if (nd > 1) {
      sqlite3_str_appendchar(o, 1, '.');
      sqlite3_str_append(o, dig + 1, nd - 1);
    }
    sqlite3_str_appendf(o, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
  }
}

/* A JSON number s[i..j) as Python's str() of what orjson reads it as: an
** integer within [-2^63, 2^64) as its digits, any other number a float. */
static void py_number(sqlite3_str *o, const char *s, size_t i, size_t j, size_t len) {
  int64_t n;
  double d;
  int integer = util_json_type(s, i, len) == UTIL_JSON_INTEGER;
  int t = util_json_number(s, i, len, &n, &d);
  if (integer && t == UTIL_JSON_INTEGER) {
    sqlite3_str_appendf(o, "%lld", (long long)n);
  } else if (integer && s[i] != '-' && j - i <= 20) { /* (2^63 .. 2^64-1: an int still) */
    char b[24];
    memcpy(b, s + i, j - i);
    b[j - i] = 0;
    if (strlen(b) < 20 || strcmp(b, "18446744073709551615") <= 0) sqlite3_str_appendall(o, b);
    else py_float(o, d);
  } else {
    py_float(o, d);
  }
}

/* A string (decoded UTF-8) as json.dumps(ensure_ascii=False) writes it. */
static void py_str(sqlite3_str *o, const char *z, size_t n) {
  sqlite3_str_appendchar(o, 1, '"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)z[i];
    switch (c) {
    case '"': sqlite3_str_appendall(o, "\\\""); break;
    case '\\': sqlite3_str_appendall(o, "\\\\"); break;
    case '\n': sqlite3_str_appendall(o, "\\n"); break;
    case '\r': sqlite3_str_appendall(o, "\\r"); break;
    case '\t': sqlite3_str_appendall(o, "\\t"); break;
    case '\b': sqlite3_str_appendall(o, "\\b"); break;
    case '\f': sqlite3_str_appendall(o, "\\f"); break;
    default:
      if (c < 0x20) sqlite3_str_appendf(o, "\\u%04x", c);
      else sqlite3_str_appendchar(o, 1, (char)c);
    }
  }
  sqlite3_str_appendchar(o, 1, '"');
}

/* A key or string value decoded (malloc'd, length in *n; NULL: no memory). */
static char *decode(const char *s, size_t i, size_t len, size_t *n) {
  size_t end = util_json_end(s, i, len);
  char *z = malloc(end - i + 1);
  if (!z) return NULL;
  util_json_string(s, i, len, z, n);
  z[*n] = 0;
  return z;
}

typedef struct member {
  char *key;
  size_t klen, v0, v1, pos;
} member;

static int member_cmp(const void *a, const void *b) {
  const member *x = a, *y = b;
  size_t n = x->klen < y->klen ? x->klen : y->klen;
  int c = memcmp(x->key, y->key, n);
  if (c) return c;
  if (x->klen != y->klen) return x->klen < y->klen ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos; /* (stable: the last of equal keys wins) */
}

/* The members of the object at s[i] (decoded keys), in order; *n of them.
** NULL with *n 0 for an empty object; *nomem on failure. */
static member *members(const char *s, size_t i, size_t len, size_t *n, int *nomem) {
  util_json_iter it;
  member *m = NULL;
  size_t cap = 0;
  *n = 0;
  if (util_json_iter_init(&it, s, i, len)) return NULL;
  while (util_json_next(&it)) {
    if (*n == cap) {
      member *g = realloc(m, (cap = cap ? 2 * cap : 8) * sizeof *m);
      if (!g) goto oom;
      m = g;
    }
    member *e = &m[*n];
    if (!(e->key = decode(s, it.key, len, &e->klen))) goto oom;
    e->v0 = it.v0;
    e->v1 = it.v1;
    e->pos = (*n)++;
  }
  return m;
oom:
  for (size_t k = 0; k < *n; k++) free(m[k].key);
  free(m);
  *n = 0;
  *nomem = 1;
  return NULL;
}

static void free_members(member *m, size_t n) {
  for (size_t k = 0; k < n; k++) free(m[k].key);
  free(m);
}

/* json.dumps(value, sort_keys=True, ensure_ascii=False) of s[i..). */
static void py_dumps(sqlite3_str *o, const char *s, size_t i, size_t len, int *nomem) {
  int t = util_json_type(s, i, len);
  size_t j = util_json_end(s, i, len);
  switch (t) {
  case UTIL_JSON_NULL: sqlite3_str_appendall(o, "null"); return;
  case UTIL_JSON_TRUE: sqlite3_str_appendall(o, "true"); return;
  case UTIL_JSON_FALSE: sqlite3_str_appendall(o, "false"); return;
  case UTIL_JSON_INTEGER:
  case UTIL_JSON_REAL: py_number(o, s, i, j, len); return;
  case UTIL_JSON_TEXT: {
    size_t n;
    char *z = decode(s, i, len, &n);
    if (!z) {
      *nomem = 1;
      return;
    }
    py_str(o, z, n);
    free(z);
    return;
  }
  case UTIL_JSON_ARRAY: {
    util_json_iter it;
    int first = 1;
    sqlite3_str_appendchar(o, 1, '[');
    if (util_json_iter_init(&it, s, i, len) == 0)
      while (util_json_next(&it)) {
        if (!first) sqlite3_str_appendall(o, ", ");
        first = 0;
        py_dumps(o, s, it.v0, len, nomem);
      }
    sqlite3_str_appendchar(o, 1, ']');
    return;
  }
  case UTIL_JSON_OBJECT: {
    size_t n;
    member *m = members(s, i, len, &n, nomem);
    if (n > 1) qsort(m, n, sizeof *m, member_cmp);
    sqlite3_str_appendchar(o, 1, '{');
    int first = 1;
    for (size_t k = 0; k < n; k++) {
      if (k + 1 < n && m[k].klen == m[k + 1].klen && !memcmp(m[k].key, m[k + 1].key, m[k].klen))
        continue; /* a key repeated: its last value, as Python's dict keeps it */
      if (!first) sqlite3_str_appendall(o, ", ");
      first = 0;
      py_str(o, m[k].key, m[k].klen);
      sqlite3_str_appendall(o, ": ");
      py_dumps(o, s, m[k].v0, len, nomem);
    }
    free_members(m, n);
    sqlite3_str_appendchar(o, 1, '}');
    return;
  }
  default: return;
  }
}

/* ---- the walk ----------------------------------------------------------- */

/* One text found: counted, and kept when it is the one wanted.  The value
** at s[i] as str() (strings, numbers, booleans) or json.dumps (arrays,
** objects); null gives none. */
static void emit(lg_out *r, const char *s, size_t i, size_t len) {
  int t = util_json_type(s, i, len);
  if (t == UTIL_JSON_NULL || t < 0) return;
  if (r->n++ != r->want || r->text) return;
  sqlite3_str *o = r->text = sqlite3_str_new(NULL);
  switch (t) {
  case UTIL_JSON_TRUE: sqlite3_str_appendall(o, "True"); break;
  case UTIL_JSON_FALSE: sqlite3_str_appendall(o, "False"); break;
  case UTIL_JSON_INTEGER:
  case UTIL_JSON_REAL: py_number(o, s, i, util_json_end(s, i, len), len); break;
  case UTIL_JSON_TEXT: {
    size_t n;
    char *z = decode(s, i, len, &n);
    if (!z) r->nomem = 1;
    else sqlite3_str_append(o, z, (int)n);
    free(z);
    break;
  }
  default: py_dumps(o, s, i, len, &r->nomem);
  }
}

/* The tokens of a path, as tokenize_path makes them: [k].p, [k].n spans. */
typedef struct token {
  const char *p;
  size_t n;
} token;

static int tokenize(const char *path, size_t len, token **out, size_t *n) {
  token *t = NULL;
  size_t cap = 0, i = 0, start = 0, cur = 0; /* cur: bytes of the current name */
  *n = 0;
#define PUSH(P, N)                                                  \
  do {                                                              \
    if (*n == cap) {                                                \
      token *g = realloc(t, (cap = cap ? 2 * cap : 8) * sizeof *t); \
      if (!g) {                                                     \
        free(t);                                                    \
        return -1;                                                  \
      }                                                             \
      t = g;                                                        \
    }                                                               \
    t[*n].p = (P);                                                  \
    t[(*n)++].n = (N);                                              \
  } while (0)
  while (i < len) {
    char c = path[i];
    if (c == '[' || c == '{') {
      char close = c == '[' ? ']' : '}';
      if (cur) PUSH(path + start, cur);
      cur = 0;
      size_t b = i++;
      int depth = 1;
      while (i < len && depth > 0) {
        if (path[i] == c) depth++;
        else if (path[i] == close) depth--;
        i++;
      }
      PUSH(path + b, i - b);
      start = i;
      continue;
    }
    if (c == '.') {
      if (cur) PUSH(path + start, cur);
      cur = 0;
      start = i + 1;
    } else {
      if (!cur) start = i;
      cur++;
    }
    i++;
  }
  if (cur) PUSH(path + start, cur);
#undef PUSH
  *out = t;
  return 0;
}

/* Python's int() of an index text: spaces, a sign, digits with single
** underscores between them.  0, or -1 when it is not one. */
static int py_int(const char *p, size_t n, long *v) {
  size_t i = 0;
  while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
  while (n > i && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
  int neg = 0;
  if (i < n && (p[i] == '+' || p[i] == '-')) neg = p[i++] == '-';
  if (i >= n) return -1;
  long x = 0;
  int last_digit = 0;
  for (; i < n; i++) {
    if (p[i] >= '0' && p[i] <= '9') {
      if (x > 100000000L) x = 100000000L; /* (beyond any array here) */
      x = x * 10 + (p[i] - '0');
      last_digit = 1;
    } else if (p[i] == '_' && last_digit && i + 1 < n) {
      last_digit = 0;
    } else {
      return -1;
    }
  }
  if (!last_digit) return -1;
  *v = neg ? -x : x;
  return 0;
}

/* The value of member key[0..kn) of the object at s[i] (its last, as a
** dict has it): its offset, or (size_t)-1. */
static size_t member_at(const char *s, size_t i, size_t len, const char *key, size_t kn, int *nomem) {
  util_json_iter it;
  size_t at = (size_t)-1;
  if (util_json_type(s, i, len) != UTIL_JSON_OBJECT || util_json_iter_init(&it, s, i, len)) return at;
  while (util_json_next(&it)) {
    size_t n;
    char *k = decode(s, it.key, len, &n);
    if (!k) {
      *nomem = 1;
      return (size_t)-1;
    }
    if (n == kn && !memcmp(k, key, kn)) at = it.v0;
    free(k);
  }
  return at;
}

static void walk(lg_out *r, const char *s, size_t i, size_t len, const token *t, size_t nt, size_t pos,
                 int depth) {
  if (r->nomem || depth > UTIL_JSON_MAX_DEPTH) return;
  if (pos >= nt) {
    emit(r, s, i, len);
    return;
  }
  const token *k = &t[pos];
  int type = util_json_type(s, i, len);
  if (k->n >= 2 && k->p[0] == '[' && k->p[k->n - 1] == ']') {
    if (type != UTIL_JSON_ARRAY) return;
    util_json_iter it;
    if (util_json_iter_init(&it, s, i, len)) return;
    if (k->n == 3 && k->p[1] == '*') {
      while (util_json_next(&it)) walk(r, s, it.v0, len, t, nt, pos + 1, depth + 1);
      return;
    }
    long idx, count = 0;
    if (py_int(k->p + 1, k->n - 2, &idx)) return;
    if (idx < 0) {
      util_json_iter c = it;
      while (util_json_next(&c)) count++;
      idx += count;
      if (idx < 0) return;
    }
    for (long e = 0; util_json_next(&it); e++)
      if (e == idx) {
        walk(r, s, it.v0, len, t, nt, pos + 1, depth + 1);
        return;
      }
  } else if (k->n >= 2 && k->p[0] == '{' && k->p[k->n - 1] == '}') {
    if (type != UTIL_JSON_OBJECT) return;
    /* each comma-separated field, stripped, through objects only; the
       tokens after the brace are not followed */
    const char *f = k->p + 1, *end = k->p + k->n - 1;
    while (f <= end) {
      const char *c = memchr(f, ',', (size_t)(end - f));
      if (!c) c = end;
      const char *a = f, *b = c;
      while (a < b && strchr(" \t\n\r\v\f", *a)) a++;
      while (b > a && strchr(" \t\n\r\v\f", b[-1])) b--;
      token *ft = NULL;
      size_t nf = 0;
      if (tokenize(a, (size_t)(b - a), &ft, &nf)) {
        r->nomem = 1;
        return;
      }
      size_t at = nf ? i : (size_t)-1;
      for (size_t q = 0; q < nf && at != (size_t)-1; q++) at = member_at(s, at, len, ft[q].p, ft[q].n, &r->nomem);
      free(ft);
      if (at != (size_t)-1) emit(r, s, at, len);
      f = c + 1;
    }
  } else if (k->n == 1 && k->p[0] == '*') {
    if (type == UTIL_JSON_ARRAY) {
      util_json_iter it;
      if (util_json_iter_init(&it, s, i, len) == 0)
        while (util_json_next(&it)) walk(r, s, it.v0, len, t, nt, pos + 1, depth + 1);
    } else if (type == UTIL_JSON_OBJECT) {
      /* the dict's values in order; a repeated key at its first place
         with its last value, as a dict keeps it: sorted by key (then
         place), each run gives its first member the last one's value */
      size_t n;
      member *m = members(s, i, len, &n, &r->nomem);
      size_t *val = n ? malloc(n * sizeof *val) : NULL;
      if (n && !val) r->nomem = 1;
      if (val) {
        for (size_t a = 0; a < n; a++) val[a] = (size_t)-1;
        if (n > 1) qsort(m, n, sizeof *m, member_cmp);
        for (size_t a = 0, b; a < n; a = b) {
          for (b = a + 1; b < n && m[b].klen == m[a].klen && !memcmp(m[b].key, m[a].key, m[a].klen); b++) {}
          val[m[a].pos] = m[b - 1].v0;
        }
        for (size_t a = 0; a < n && !r->nomem; a++)
          if (val[a] != (size_t)-1) walk(r, s, val[a], len, t, nt, pos + 1, depth + 1);
      }
      free(val);
      free_members(m, n);
    }
  } else {
    size_t at = member_at(s, i, len, k->p, k->n, &r->nomem);
    if (at != (size_t)-1) walk(r, s, at, len, t, nt, pos + 1, depth + 1);
  }
}

/* The want-th text path[0..pn) gives in the value; r->n the count. */
static int texts(const char *v, size_t vn, const char *path, size_t pn, long want, lg_out *r) {
  memset(r, 0, sizeof *r);
  r->want = want;
  size_t i = util_json_ws(v, 0, vn);
  if (!pn || (pn == 1 && path[0] == '$')) {
    r->n = 1;
    if (want == 0) {
      r->text = sqlite3_str_new(NULL);
      py_dumps(r->text, v, i, vn, &r->nomem);
    }
    return r->nomem ? -2 : 0;
  }
  token *t = NULL;
  size_t nt = 0;
  if (tokenize(path, pn, &t, &nt)) return -2;
  walk(r, v, i, vn, t, nt, 0, 0);
  free(t);
  return r->nomem ? -2 : 0;
}

int mig_langgraph_text(const char *v, size_t vn, const char *field, size_t fn, char **out, size_t *outn) {
  *out = NULL;
  *outn = 0;
  if (util_json_valid(v, vn, NULL, 0)) return -1;
  lg_out r;
  int rc = texts(v, vn, field, fn, 0, &r);
  if (rc == 0 && r.n != 1) { /* path.N: the N-th of the n > 1 texts path gives */
    sqlite3_free(sqlite3_str_finish(r.text));
    r.text = NULL;
    size_t d = fn;
    while (d > 0 && field[d - 1] >= '0' && field[d - 1] <= '9') d--;
    long idx;
    if (d > 1 && d < fn && field[d - 1] == '.' && fn - d < 9 && py_int(field + d, fn - d, &idx) == 0 &&
        (field[d] != '0' || fn - d == 1)) {
      rc = texts(v, vn, field, d - 1, idx, &r);
      if (rc == 0 && !(r.n > 1 && idx < r.n)) {
        sqlite3_free(sqlite3_str_finish(r.text));
        r.text = NULL;
      }
    }
  }
  if (rc) {
    sqlite3_free(sqlite3_str_finish(r.text));
    return rc;
  }
  if (!r.text) return 0;
  int n = sqlite3_str_length(r.text);
  if (sqlite3_str_errcode(r.text)) {
    sqlite3_free(sqlite3_str_finish(r.text));
    return -2;
  }
  *out = sqlite3_str_finish(r.text);
  *outn = (size_t)n;
  if (!*out) { /* (an empty text) */
    *out = sqlite3_mprintf("%s", "");
    if (!*out) return -2;
  }
  return 1;
}
