-- sql/migrate_sqlite_vec.sql - a sqlite-vec vec0 table into an h5mem store,
-- in plain SQL.  Reading a vec0 table in SQL needs sqlite-vec loaded;
-- h5mem_migrate() reads its shadow tables without it (docs/MIGRATION.md,
-- "sqlite-vec").  Here: vec0(embedding float[384], category text, +content text):
-- the metadata column stays a column, the auxiliary content is the text.
--   sqlite3 -cmd '.load ./h5mem' -cmd '.load ./vec0' :memory: < sql/migrate_sqlite_vec.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them: the rows
-- read go into a temporary table with the reason each is skipped
-- (h5mem_check's), the counts are printed, and the rest written.
ATTACH 'file:vec.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='vec.h5', dim=384, metric=l2,  -- vec0's default metric
                                     category text);
CREATE TEMP TABLE rows AS
  SELECT *, h5mem_check('mem', id, text, embedding, category) AS skipped
  FROM (SELECT rowid AS id, content AS text, embedding, category FROM src.items ORDER BY rowid);
SELECT skipped, count(*) AS rows FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT INTO mem(id, text, embedding, category)
  SELECT id, text, embedding, category FROM rows WHERE skipped IS NULL ORDER BY rowid;
COMMIT;
SELECT h5mem_checkpoint('mem');
