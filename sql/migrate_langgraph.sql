-- sql/migrate_langgraph.sql - LangGraph's SqliteStore (store, store_vectors)
-- into an h5mem store, in plain SQL: one record per embedded field.
-- docs/MIGRATION.md, "LangGraph's SqliteStore".  json_extract finds simple
-- field paths ("text", "memory.text"); h5mem_migrate() also follows list
-- indexes ("content.0").
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_langgraph.sql
ATTACH 'file:langgraph.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='langgraph.h5', dim=1536);
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, source, ts, meta)
  SELECT v.rowid, json_extract(CAST(s.value AS TEXT), '$.' || v.field_name), v.embedding, v.prefix,
         v.updated_at,
         json_object('namespace', v.prefix, 'key', v.key, 'field', v.field_name,
                     'value', json(CAST(s.value AS TEXT)), 'created_at', v.created_at)
  FROM src.store_vectors AS v JOIN src.store AS s ON s.prefix = v.prefix AND s.key = v.key
  WHERE json_extract(CAST(s.value AS TEXT), '$.' || v.field_name) IS NOT NULL;
COMMIT;
SELECT h5mem_checkpoint('mem');
