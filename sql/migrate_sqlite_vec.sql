-- sql/migrate_sqlite_vec.sql - a sqlite-vec vec0 table into an h5mem store,
-- in plain SQL.  Reading a vec0 table in SQL needs sqlite-vec loaded;
-- h5mem_migrate() reads its shadow tables without it (docs/MIGRATION.md,
-- "sqlite-vec").  Here: vec0(embedding float[384], category text, +content text).
--   sqlite3 -cmd '.load ./h5mem' -cmd '.load ./vec0' :memory: < sql/migrate_sqlite_vec.sql
ATTACH 'file:vec.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='vec.h5', dim=384, metric=l2);  -- vec0's default metric
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, meta)
  SELECT rowid, content, embedding, json_object('category', category) FROM src.items;
COMMIT;
SELECT h5mem_checkpoint('mem');
