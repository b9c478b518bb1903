-- sql/migrate_langchain.sql - LangChain's SQLiteVec table into an h5mem
-- store, in plain SQL.  docs/MIGRATION.md, "LangChain's SQLiteVec".
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_langchain.sql
ATTACH 'file:vec.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='langchain.h5', dim=1536);
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, meta)
  SELECT rowid, text, text_embedding,
         CASE WHEN json_valid(metadata) THEN metadata ELSE json_quote(metadata) END
  FROM src.state_union WHERE trim(text) <> '';   -- the table's name as given to SQLiteVec
COMMIT;
SELECT h5mem_checkpoint('mem');
