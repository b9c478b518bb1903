/*
** ext/migrate/mig_graph.c - the knowledge graph of ClawhDF5's migration
** schema: entities(id, name, type, embedding_idx) and relations(src, tgt,
** relation, weight, timestamp).
**
** PENDING (issue 8): the store does not keep a graph yet, so these tables
** are read and checked, and the report counts them as "pending (issue 8)";
** nothing is written.  When lib/store gains its graph API, mig_graph_clawhdf5
** is the one place to wire: map each valid entity and relation to it here,
** in the same batches as the memories.  Nothing else in the migration
** depends on it.
*/
#include <string.h>

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
  sqlite3_str_appendall(p->info, ",\"graph\":{\"status\":\"pending (issue 8): read and checked, not written\"");
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
