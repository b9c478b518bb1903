/*
** ext/migrate/mig_graph.c - the knowledge graph of ClawhDF5's migration
** schema: entities(id, name, type, embedding_idx) and relations(src, tgt,
** relation, weight, timestamp).
**
** mig_graph_clawhdf5 reads and checks them when the source is detected
** (counts for the report); mig_graph_write writes the valid ones to the
** store's graph after the memories, in one transaction: an entity keeps
** its id, name and type (embedding_idx, when >= 0, goes to its meta); a
** relation gets the source row's rowid as its id, src and tgt as src and
** dst, relation as its type, weight (NULL: 1.0) and timestamp (seconds,
** rounded down).  Rows already in the store (a migration run again) count
** as duplicates; relations naming an entity that is not there are skipped
** as dangling.
**
** mig_graph_mem0 writes mem0's entity store the same way: each entity
** (its rowid the id, data the name, entityType the type, its UUID and
** scopes in meta) and a mention of it by each memory of its
** linkedMemoryIds (the memory's id: its row's rowid in vectors).
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../ext_err.h"
#include "mig.h"

/* One count from the source (-1 when the query fails). */
static sqlite3_int64 count(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  sqlite3_int64 n = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

static int has_columns(sqlite3 *db, const char *table, const char *const *cols) {
  sqlite3_stmt *st;
  int n = 0, want = 0;
  while (cols[want]) want++;
  if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1)", -1, &st, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *c = (const char *)sqlite3_column_text(st, 0);
    for (int i = 0; c && cols[i]; i++) n += !strcmp(c, cols[i]);
  }
  sqlite3_finalize(st);
  return n == want;
}

int mig_graph_clawhdf5(sqlite3 *db, mig_plan *p, char **err) {
  (void)err;
  static const char *const ent[] = {"id", "name", "type", "embedding_idx", NULL};
  static const char *const rel[] = {"src", "tgt", "relation", "weight", "timestamp", NULL};
  int he = has_columns(db, "entities", ent), hr = has_columns(db, "relations", rel);
  if (!he && !hr && !count(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('entities','relations')"))
    return SQLITE_OK;
  sqlite3_str_appendall(p->info, ",\"graph\":{\"status\":\"read and checked\"");
  if (he) {
    sqlite3_str_appendf(
        p->info, ",\"entities\":%lld,\"invalid_entities\":%lld",
        (long long)count(db, "SELECT count(*) FROM entities"),
        (long long)count(db, "SELECT count(*) FROM entities WHERE typeof(id) <> 'integer' OR "
                             "typeof(name) <> 'text' OR name = '' OR typeof(type) <> 'text'"));
  } else {
    sqlite3_str_appendall(p->info, ",\"entities\":null");
    mig_note(p, "entities lacks ClawhDF5's columns (id, name, type, embedding_idx): not read");
  }
  if (hr && he) {
    sqlite3_str_appendf(
        p->info, ",\"relations\":%lld,\"invalid_relations\":%lld,\"dangling_relations\":%lld",
        (long long)count(db, "SELECT count(*) FROM relations"),
        (long long)count(db, "SELECT count(*) FROM relations WHERE typeof(src) <> 'integer' OR "
                             "typeof(tgt) <> 'integer' OR typeof(relation) <> 'text' OR "
                             "relation = '' OR typeof(weight) NOT IN ('integer','real','null')"),
        (long long)count(db, "SELECT count(*) FROM relations AS r WHERE NOT EXISTS (SELECT 1 FROM "
                             "entities AS e WHERE e.id = r.src) OR NOT EXISTS (SELECT 1 FROM "
                             "entities AS e WHERE e.id = r.tgt)"));
  } else if (hr) {
    sqlite3_str_appendf(p->info, ",\"relations\":%lld",
                        (long long)count(db, "SELECT count(*) FROM relations"));
  } else {
    sqlite3_str_appendall(p->info, ",\"relations\":null");
    mig_note(p, "relations lacks ClawhDF5's columns (src, tgt, relation, weight, timestamp): not read");
  }
  sqlite3_str_appendchar(p->info, 1, '}');
  return SQLITE_OK;
}

/* The name (column name_col of q, -1: none) and the type (type_col) of a
** graph record into r->s[0], r->s[1] as the store takes them (mig_utf8,
** copies in fix[0], fix[1]): 0, 1 when one was repaired, -1 when one holds
** a NUL byte (an invalid row) or memory ran out (*rc SQLITE_NOMEM). */
static int strings(sqlite3_stmt *q, int name_col, int type_col, store_grec *r, strbuf *fix, int *rc) {
  int fixed = 0;
  for (int k = 0; k < 2; k++) {
    int c = k ? type_col : name_col;
    if (c < 0) continue;
    const char *v = (const char *)sqlite3_column_text(q, c);
    int t = v ? mig_utf8(v, (size_t)sqlite3_column_bytes(q, c), 0, &fix[k], &r->s[k], &r->n[k]) : -2;
    if (t == -2) *rc = SQLITE_NOMEM;
    if (t < 0) return -1;
    fixed |= t;
  }
  return fixed;
}

/* What mig_graph_write did, for the report. */
typedef struct tally {
  int64_t put[3]; /* entities, relations, mentions (STORE_G_*) */
  int64_t dup, fixed;
} tally;

/* Record r (what: "entity" or "relation", for the message; fixed: 1 when
** its strings were repaired) into graph table of st unless it is there
** already (a migration run again), counted in *n; on a dry run (st NULL)
** only counted.  SQLITE_OK, or the store's code (ext_err_rc) with its
** message in *err. */
static int put_new(store *st, int table, const store_grec *r, const char *what, int fixed,
                   tally *n, char **err) {
  uint64_t pos;
  if (st && store_g_find(st, table, r->id, &pos) == STORE_OK) {
    n->dup++;
    return SQLITE_OK;
  }
  int pr = st ? store_g_put(st, table, r) : STORE_OK;
  if (pr != STORE_OK) {
    *err = sqlite3_mprintf("graph: %s %lld: %s", what, (long long)r->id, store_errmsg(st));
    return ext_err_rc(pr);
  }
  n->put[table]++;
  n->fixed += fixed;
  return SQLITE_OK;
}

/* The transaction of a graph write ended: committed when rc is SQLITE_OK. */
static int end_tx(store *st, int rc, char **err) {
  if (!st) return rc;
  int sr = rc == SQLITE_OK ? store_prepare(st) : STORE_EIO;
  if (sr == STORE_OK) sr = store_commit(st, 1);
  else store_rollback(st);
  if (sr != STORE_OK && rc == SQLITE_OK) {
    *err = sqlite3_mprintf("graph: %s", store_errmsg(st));
    rc = ext_err_rc(sr);
  }
  return rc;
}

/* The report's "graph_written": the entities and the records of table
** t (relations or mentions) written, and the skipped. */
static void written(mig_plan *p, const tally *n, int t, int64_t invalid, int64_t dangling) {
  sqlite3_str_appendf(p->info, ",\"graph_written\":{\"entities\":%lld,\"%s\":%lld,"
                      "\"skipped\":{\"invalid\":%lld,\"dangling\":%lld,\"duplicate\":%lld}",
                      (long long)n->put[STORE_G_ENTITY], t == STORE_G_MENTION ? "mentions" : "relations",
                      (long long)n->put[t], (long long)invalid, (long long)dangling, (long long)n->dup);
  if (n->fixed) sqlite3_str_appendf(p->info, ",\"utf8_repaired\":%lld", (long long)n->fixed);
  sqlite3_str_appendchar(p->info, 1, '}');
}

int mig_graph_write(sqlite3 *db, store *st, mig_plan *p, char **err) {
  static const char *const ent[] = {"id", "name", "type", "embedding_idx", NULL};
  static const char *const rel[] = {"src", "tgt", "relation", "weight", "timestamp", NULL};
  if (!has_columns(db, "entities", ent)) return SQLITE_OK;
  int64_t invalid = 0, dangling = 0;
  tally n = {{0, 0, 0}, 0, 0};
  strbuf fix[2] = {{0}, {0}}; /* name and type with invalid UTF-8 replaced */
  int rc = SQLITE_OK;
  int br = st ? store_begin(st) : STORE_OK;
  if (br != STORE_OK) {
    *err = sqlite3_mprintf("graph: %s", store_errmsg(st));
    return ext_err_rc(br);
  }
  sqlite3_stmt *q;
  /* entities: kept in a set of ids for the relations' check (dry runs too) */
  rc = sqlite3_prepare_v2(db, "SELECT id, name, type, embedding_idx FROM entities ORDER BY id", -1,
                          &q, NULL);
  sqlite3 *mem = NULL;
  sqlite3_stmt *ins = NULL, *has = NULL;
  if (rc == SQLITE_OK) rc = sqlite3_open(":memory:", &mem);
  if (rc == SQLITE_OK) rc = sqlite3_exec(mem, "CREATE TABLE e(id INTEGER PRIMARY KEY)", NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(mem, "INSERT OR IGNORE INTO e VALUES (?1)", -1, &ins, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(mem, "SELECT 1 FROM e WHERE id = ?1", -1, &has, NULL);
  while (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
    store_grec r;
    memset(&r, 0, sizeof r);
    int t = -1;
    if (sqlite3_column_type(q, 0) != SQLITE_INTEGER || sqlite3_column_type(q, 1) != SQLITE_TEXT ||
        sqlite3_column_bytes(q, 1) == 0 || sqlite3_column_type(q, 2) != SQLITE_TEXT ||
        (t = strings(q, 1, 2, &r, fix, &rc)) < 0) {
      invalid += rc == SQLITE_OK;
      continue;
    }
    r.id = sqlite3_column_int64(q, 0);
    char meta[64];
    if (sqlite3_column_type(q, 3) == SQLITE_INTEGER && sqlite3_column_int64(q, 3) >= 0) {
      snprintf(meta, sizeof meta, "{\"embedding_idx\":%lld}", (long long)sqlite3_column_int64(q, 3));
      r.s[3] = meta;
      r.n[3] = strlen(meta);
    }
    sqlite3_bind_int64(ins, 1, r.id);
    sqlite3_step(ins);
    sqlite3_reset(ins);
    if ((rc = put_new(st, STORE_G_ENTITY, &r, "entity", t, &n, err)) != SQLITE_OK) break;
  }
  sqlite3_finalize(q);
  q = NULL;
  if (rc == SQLITE_OK && has_columns(db, "relations", rel))
    rc = sqlite3_prepare_v2(db, "SELECT rowid, src, tgt, relation, weight, timestamp FROM relations "
                            "ORDER BY rowid", -1, &q, NULL);
  while (rc == SQLITE_OK && q && sqlite3_step(q) == SQLITE_ROW) {
    int wt = sqlite3_column_type(q, 4), t = -1;
    store_grec r;
    memset(&r, 0, sizeof r);
    if (sqlite3_column_type(q, 1) != SQLITE_INTEGER || sqlite3_column_type(q, 2) != SQLITE_INTEGER ||
        sqlite3_column_type(q, 3) != SQLITE_TEXT || sqlite3_column_bytes(q, 3) == 0 ||
        (wt != SQLITE_INTEGER && wt != SQLITE_FLOAT && wt != SQLITE_NULL) ||
        (t = strings(q, -1, 3, &r, fix, &rc)) < 0) {
      invalid += rc == SQLITE_OK;
      continue;
    }
    r.id = sqlite3_column_int64(q, 0);
    r.a = sqlite3_column_int64(q, 1);
    r.b = sqlite3_column_int64(q, 2);
    r.weight = wt == SQLITE_NULL ? 1.0 : sqlite3_column_double(q, 4);
    double ts = sqlite3_column_double(q, 5);
    /* (no time: the migration's, as for a memory without one) */
    r.ts = sqlite3_column_type(q, 5) == SQLITE_NULL ? (int64_t)time(NULL)
           : ts > -9e18 && ts < 9e18                ? (int64_t)floor(ts)
                                                    : 0;
    int known = 1;
    for (int k = 0; k < 2 && known; k++) {
      int64_t e = k ? r.b : r.a;
      uint64_t pos;
      sqlite3_bind_int64(has, 1, e);
      known = sqlite3_step(has) == SQLITE_ROW || (st && store_g_find(st, STORE_G_ENTITY, e, &pos) == STORE_OK);
      sqlite3_reset(has);
    }
    if (!known) {
      dangling++;
      continue;
    }
    if ((rc = put_new(st, STORE_G_RELATION, &r, "relation", t, &n, err)) != SQLITE_OK) break;
  }
  sqlite3_finalize(q);
  sqlite3_finalize(ins);
  sqlite3_finalize(has);
  sqlite3_close(mem);
  strbuf_free(&fix[0]);
  strbuf_free(&fix[1]);
  rc = end_tx(st, rc, err);
  if (rc == SQLITE_OK) written(p, &n, STORE_G_RELATION, invalid, dangling);
  return rc;
}

#define E0(k) "json_extract(e.payload, '$." k "')"
/* a row of mem0's vectors that is an entity (t: its table's alias and a dot) */
#define MEM0_ENTITY(t) \
  "(CASE WHEN json_valid(" t "payload) THEN json_type(" t "payload, '$.linkedMemoryIds') END IS 'array')"

int mig_graph_mem0(sqlite3 *db, store *st, mig_plan *p, char **err) {
  int attached = count(db, "SELECT count(*) FROM pragma_database_list WHERE name = 'mem0_entities'") > 0;
  char *sql = sqlite3_mprintf(
      "SELECT e.rowid, " E0("data") ", " E0("entityType") ", json_object('mem0_id', e.id, 'user_id', "
      "coalesce(" E0("user_id") ", " E0("userId") "), 'agent_id', coalesce(" E0("agent_id") ", " E0("agentId")
      "), 'run_id', coalesce(" E0("run_id") ", " E0("runId") ")), e.payload FROM %s.vectors AS e"
      " WHERE " MEM0_ENTITY("e.") " ORDER BY e.rowid",
      attached ? "mem0_entities" : "main");
  int64_t invalid = attached ? count(db, "SELECT count(*) FROM mem0_entities.vectors WHERE NOT " MEM0_ENTITY(""))
                             : 0;
  int64_t dangling = 0, mid = 0;
  tally n = {{0, 0, 0}, 0, 0};
  strbuf fix[2] = {{0}, {0}};
  sqlite3_stmt *q = NULL, *links = NULL;
  int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &q, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, "SELECT (SELECT m.rowid FROM main.vectors AS m WHERE m.id = j.value AND NOT "
                            MEM0_ENTITY("m.") ")"
                            " FROM json_each(?1, '$.linkedMemoryIds') AS j ORDER BY j.key", -1, &links, NULL);
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("graph: reading mem0's entities: %s", sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return rc;
  }
  int br = st ? store_begin(st) : STORE_OK;
  if (br != STORE_OK) {
    sqlite3_finalize(q);
    sqlite3_finalize(links);
    *err = sqlite3_mprintf("graph: %s", store_errmsg(st));
    return ext_err_rc(br);
  }
  while (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
    store_grec r;
    memset(&r, 0, sizeof r);
    int t = -1, tt = sqlite3_column_type(q, 2);
    if (sqlite3_column_type(q, 1) != SQLITE_TEXT || sqlite3_column_bytes(q, 1) == 0 ||
        (tt != SQLITE_TEXT && tt != SQLITE_NULL) || (t = strings(q, 1, tt == SQLITE_TEXT ? 2 : -1, &r, fix, &rc)) < 0) {
      invalid += rc == SQLITE_OK;
      continue;
    }
    r.id = sqlite3_column_int64(q, 0);
    r.s[3] = (const char *)sqlite3_column_text(q, 3);
    r.n[3] = (size_t)sqlite3_column_bytes(q, 3);
    if ((rc = put_new(st, STORE_G_ENTITY, &r, "entity", t, &n, err)) != SQLITE_OK) break;
    int64_t entity = r.id;
    sqlite3_bind_value(links, 1, sqlite3_column_value(q, 4));
    while (rc == SQLITE_OK && sqlite3_step(links) == SQLITE_ROW) {
      uint64_t pos;
      if (sqlite3_column_type(links, 0) != SQLITE_INTEGER ||
          (st && store_find(st, sqlite3_column_int64(links, 0), &pos) != STORE_OK)) {
        dangling++; /* a memory not in vectors, or not written (skipped) */
        continue;
      }
      store_grec m;
      memset(&m, 0, sizeof m);
      m.id = ++mid;
      m.a = sqlite3_column_int64(links, 0);
      m.b = entity;
      rc = put_new(st, STORE_G_MENTION, &m, "mention", 0, &n, err);
    }
    sqlite3_reset(links);
  }
  sqlite3_finalize(q);
  sqlite3_finalize(links);
  strbuf_free(&fix[0]);
  strbuf_free(&fix[1]);
  rc = end_tx(st, rc, err);
  if (rc == SQLITE_OK) written(p, &n, STORE_G_MENTION, invalid, dangling);
  return rc;
}
