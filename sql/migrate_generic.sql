-- sql/migrate_generic.sql - any table of text and embeddings into an h5mem
-- store, in plain SQL.  docs/MIGRATION.md, "Any table or query"; the same
-- with h5mem_migrate():
--   SELECT h5mem_migrate('notes.db', 'notes.h5', '{"table": "notes",
--     "columns": {"id": "note_id", "text": "body", "embedding": "vec", "ts": "created",
--                 "source": "author", "session": "conversation"}}');
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_generic.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them: the rows
-- read go into a temporary table with the reason each is skipped
-- (h5mem_check's; an id met before in the source: duplicate), the counts
-- are printed, and the rest written.
ATTACH 'file:notes.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='notes.h5', dim=384);
CREATE TEMP TABLE rows AS
  SELECT *, h5mem_check('mem', id, text, embedding, source, session) AS skipped
  FROM (SELECT note_id AS id, body AS text, vec AS embedding, created AS ts, author AS source,
               conversation AS session
        FROM src.notes ORDER BY rowid);
CREATE INDEX temp.rows_id ON rows(id);
UPDATE rows SET skipped = 'duplicate' WHERE skipped IS NULL
  AND rowid > (SELECT min(r.rowid) FROM rows AS r WHERE r.id = rows.id AND r.skipped IS NULL);
SELECT skipped, count(*) AS rows FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT INTO mem(id, text, embedding, ts, source, session)
  SELECT id, text, embedding, ts, source, session FROM rows WHERE skipped IS NULL ORDER BY rowid;
COMMIT;
SELECT h5mem_checkpoint('mem');
