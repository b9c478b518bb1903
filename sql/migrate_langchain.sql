-- sql/migrate_langchain.sql - LangChain's SQLiteVec table into an h5mem
-- store, in plain SQL.  docs/MIGRATION.md, "LangChain's SQLiteVec".
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_langchain.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them
-- (h5mem_check names the reason); the rest are written.
ATTACH 'file:vec.db?mode=ro' AS src;
-- SQLiteVec ranks with its {table}_vec's MATCH: vec0's default metric, l2,
-- and the dim of its declaration (SELECT sql FROM src.sqlite_master WHERE
-- name = 'state_union_vec'), unless that declaration says distance_metric=.
CREATE VIRTUAL TABLE mem USING h5mem(path='langchain.h5', dim=1536, metric=l2);
CREATE TEMP VIEW rows AS
  SELECT rowid AS id, text, text_embedding AS embedding,
         CASE WHEN json_valid(metadata) THEN metadata ELSE json_quote(metadata) END AS meta
  FROM src.state_union;   -- the table's name as given to SQLiteVec
SELECT h5mem_check('mem', id, text, embedding) AS skipped, count(*) AS rows
  FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, meta)
  SELECT id, text, embedding, meta FROM rows WHERE h5mem_check('mem', id, text, embedding) IS NULL;
COMMIT;
SELECT h5mem_checkpoint('mem');
