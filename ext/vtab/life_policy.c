/*
** ext/vtab/life_policy.c - the lifecycle policy of an h5mem table: its
** CREATE VIRTUAL TABLE options (working_capacity, promote_after,
** semantic_after, half_life_days, merge_threshold, evict, merge_scope,
** consolidate, reinforce, gate, strategy, shift_threshold, dedup), their
** defaults and checks (docs/SQL.md, "Memory lifecycle").
**
** Nothing of the policy is written to the store: SQLite hands the CREATE
** statement's arguments back at each connect, so the options live in the
** database's schema, as the table's other options do.  A store opened by
** another database file (or by h5py) has no policy of its own: whoever
** consolidates says how.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "util/json.h"
#include "vtab_int.h"

#define WHO "h5mem"

void h5mem_policy_default(h5mem_policy *p) {
  memset(p, 0, sizeof *p);
  p->reinforce = 0;
  p->working_capacity = 1000;
  p->promote_after = 3;
  p->semantic_after = 0; /* 2 x promote_after */
  p->half_life_days = 7;
  p->merge_threshold = 0.05;
  p->evict_delete = 0;
  p->merge_all = 0;
  p->consolidate_every = 0;
  p->gate_off = 0;
  life_gate_opts_default(&p->gate);
  p->strategy = LIFE_EVERY_EXCHANGE;
  p->shift_threshold = LIFE_SHIFT_THRESHOLD;
  p->dedup = H5MEM_DEDUP_AUTO;
}

int h5mem_gate_json(life_gate_opts *o, const char *s, size_t n, char **err) {
  char verr[200];
  size_t i = util_json_ws(s, 0, n);
  if (util_json_valid(s, n, verr, sizeof verr)) {
    *err = sqlite3_mprintf("malformed JSON: %s (expected an object of h5mem_gate's options: %s)", verr,
                           EXT_LIFE_GATE_KNOWN);
    return *err ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (util_json_type(s, i, n) != UTIL_JSON_OBJECT) {
    *err = sqlite3_mprintf("expected a JSON object of h5mem_gate's options (%s)", EXT_LIFE_GATE_KNOWN);
    return *err ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  search_opt v;
  memset(&v, 0, sizeof v);
  v.type = UTIL_JSON_OBJECT;
  v.json = s + i;
  v.len = util_json_end(s, i, n) - i;
  return search_opts_object(&v, EXT_LIFE_GATE_KNOWN, ext_life_gate_option, o, err);
}

/* The policy's options, each once (bit i: names[i]). */
static const char *const names[] = {
    "working_capacity", "promote_after", "semantic_after", "half_life_days", "merge_threshold", "evict",
    "merge_scope", "consolidate", "reinforce", "gate", "strategy", "shift_threshold", "dedup", NULL};

/* An integer lo .. hi, all of v. */
static int int_value(const char *v, int64_t lo, int64_t hi, int64_t *out) {
  size_t n = strlen(v);
  int64_t x;
  double d;
  if (!n || util_json_type(v, 0, n) != UTIL_JSON_INTEGER || util_json_end(v, 0, n) != n ||
      util_json_number(v, 0, n, &x, &d) != UTIL_JSON_INTEGER || x < lo || x > hi)
    return -1;
  *out = x;
  return 0;
}

/* A number lo .. hi (JSON's syntax, whatever the locale), all of v. */
static int num_value(const char *v, double lo, double hi, double *out) {
  size_t n = strlen(v);
  int64_t x;
  double d;
  int t = n ? util_json_type(v, 0, n) : -1;
  if ((t != UTIL_JSON_INTEGER && t != UTIL_JSON_REAL) || util_json_end(v, 0, n) != n ||
      util_json_number(v, 0, n, &x, &d) < 0 || !(d >= lo && d <= hi))
    return -1;
  *out = d;
  return 0;
}

/* on|off (also true|false, 1|0) into *out; -1 for anything else. */
static int onoff(const char *v, int *out) {
  if (!sqlite3_stricmp(v, "on") || !sqlite3_stricmp(v, "true") || !strcmp(v, "1")) *out = 1;
  else if (!sqlite3_stricmp(v, "off") || !sqlite3_stricmp(v, "false") || !strcmp(v, "0")) *out = 0;
  else return -1;
  return 0;
}

#define BAD(...)                                                          \
  do {                                                                    \
    *pzErr = sqlite3_mprintf(__VA_ARGS__);                                \
    return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;                          \
  } while (0)

int h5mem_policy_arg(h5mem_policy *p, const char *k, size_t kl, const char *v, unsigned *seen, char **pzErr) {
  int known = 0;
  for (int i = 0; names[i]; i++) known |= ext_key_is(k, kl, names[i]);
  if (!known) return SEARCH_UNKNOWN;
  if (ext_key_repeated(k, kl, names, seen)) BAD("%s: duplicate option '%.*s' (each option once)", WHO, (int)kl, k);
#define KEY(s) ext_key_is(k, kl, s)
  if (KEY("working_capacity")) {
    if (int_value(v, 0, (int64_t)1e12, &p->working_capacity))
      BAD("%s: working_capacity=%s: expected an integer from 0 to 1000000000000", WHO, v);
  } else if (KEY("promote_after") || KEY("semantic_after")) {
    int64_t x;
    if (int_value(v, 1, (int64_t)1e12, &x))
      BAD("%s: %.*s=%s: expected an integer from 1 to 1000000000000 (uses)", WHO, (int)kl, k, v);
    *(KEY("promote_after") ? &p->promote_after : &p->semantic_after) = x;
  } else if (KEY("half_life_days")) {
    if (num_value(v, 1e-9, 1e9, &p->half_life_days))
      BAD("%s: half_life_days=%s: expected a number from 1e-09 to 1e+09", WHO, v);
  } else if (KEY("merge_threshold")) {
    if (!sqlite3_stricmp(v, "off")) p->merge_threshold = -1;
    else if (num_value(v, 0, 2, &p->merge_threshold))
      BAD("%s: merge_threshold=%s: expected a cosine distance from 0 to 2, or off", WHO, v);
  } else if (KEY("shift_threshold")) {
    if (num_value(v, 0, 2, &p->shift_threshold))
      BAD("%s: shift_threshold=%s: expected a cosine distance from 0 to 2", WHO, v);
  } else if (KEY("evict")) {
    if (!sqlite3_stricmp(v, "archive")) p->evict_delete = 0;
    else if (!sqlite3_stricmp(v, "delete")) p->evict_delete = 1;
    else if (!sqlite3_stricmp(v, "lru")) p->evict_order = 1; /* (an ephemeral store's capacity) */
    else if (!sqlite3_stricmp(v, "score")) p->evict_order = 2;
    else BAD("%s: evict=%s: expected archive or delete (consolidation), or lru or score (an ephemeral "
             "store's capacity)", WHO, v);
  } else if (KEY("merge_scope")) {
    if (!sqlite3_stricmp(v, "working")) p->merge_all = 0;
    else if (!sqlite3_stricmp(v, "all")) p->merge_all = 1;
    else BAD("%s: merge_scope=%s: expected working or all", WHO, v);
  } else if (KEY("consolidate")) {
    int64_t x = 0;
    if (!sqlite3_stricmp(v, "off")) p->consolidate_every = 0;
    else if (!sqlite3_stricmp(v, "auto")) p->consolidate_every = 100;
    else if (!sqlite3_strnicmp(v, "auto:", 5) && !int_value(v + 5, 1, (int64_t)1e12, &x)) p->consolidate_every = x;
    else BAD("%s: consolidate=%s: expected off, auto or auto:N (a cycle every N memories "
             "h5mem_remember inserts; N from 1 to 1000000000000)", WHO, v);
  } else if (KEY("reinforce")) {
    if (onoff(v, &p->reinforce)) BAD("%s: reinforce=%s: expected on or off", WHO, v);
  } else if (KEY("gate")) {
    int on;
    if (!onoff(v, &on)) {
      p->gate_off = !on;
    } else {
      char *err = NULL;
      int rc = h5mem_gate_json(&p->gate, v, strlen(v), &err);
      if (rc == SQLITE_NOMEM) return rc;
      if (rc != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("%s: gate: %s (gate=on, off, or a JSON object)", WHO, err ? err : "bad value");
        sqlite3_free(err);
        return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
      }
      p->gate_off = 0;
    }
  } else if (KEY("strategy")) {
    int s = life_strategy_from_name(v);
    if (s < 0) BAD("%s: strategy=%s: expected every_exchange, semantic_shift or always", WHO, v);
    p->strategy = s;
  } else if (KEY("dedup")) {
    static const char *const d[] = {"auto", "any", "session", "source", "off"};
    int i = 0;
    while (i < 5 && sqlite3_stricmp(v, d[i])) i++;
    if (i == 5) BAD("%s: dedup=%s: expected auto, any, session, source or off", WHO, v);
    p->dedup = i;
  }
#undef KEY
  return SQLITE_OK;
}
