-- sql/migrate_langchain.sql - LangChain's SQLiteVec table into an h5mem
-- store, in plain SQL.  docs/MIGRATION.md, "LangChain's SQLiteVec".
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_langchain.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them: the rows
-- read go into a temporary table with the reason each is skipped
-- (h5mem_check's; an id met before in the source: duplicate), the counts
-- are printed, and the rest written.
ATTACH 'file:vec.db?mode=ro' AS src;
-- SQLiteVec ranks with its {table}_vec's MATCH: vec0's default metric, l2,
-- and the dim of its declaration (SELECT sql FROM src.sqlite_master WHERE
-- name = 'state_union_vec'), unless that declaration says distance_metric=.
CREATE VIRTUAL TABLE mem USING h5mem(path='langchain.h5', dim=1536, metric=l2);
CREATE TEMP TABLE rows AS
  SELECT *, h5mem_check('mem', id, text, embedding, meta) AS skipped
  FROM (SELECT rowid AS id, text, text_embedding AS embedding,
               CASE WHEN json_valid(metadata) THEN metadata ELSE json_quote(metadata) END AS meta
        FROM src.state_union ORDER BY rowid);   -- the table's name as given to SQLiteVec
CREATE INDEX temp.rows_id ON rows(id);
UPDATE rows SET skipped = 'duplicate' WHERE skipped IS NULL
  AND rowid > (SELECT min(r.rowid) FROM rows AS r WHERE r.id = rows.id AND r.skipped IS NULL);
SELECT skipped, count(*) AS rows FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT INTO mem(id, text, embedding, meta)
  SELECT id, text, embedding, meta FROM rows WHERE skipped IS NULL ORDER BY rowid;
COMMIT;
SELECT h5mem_checkpoint('mem');
