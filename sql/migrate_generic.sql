-- sql/migrate_generic.sql - any table of text and embeddings into an h5mem
-- store, in plain SQL.  docs/MIGRATION.md, "Any table or query"; the same
-- with h5mem_migrate():
--   SELECT h5mem_migrate('notes.db', 'notes.h5', '{"table": "notes",
--     "columns": {"id": "note_id", "text": "body", "embedding": "vec", "ts": "created"}}');
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_generic.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them
-- (h5mem_check names the reason); the rest are written.
ATTACH 'file:notes.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='notes.h5', dim=384);
CREATE TEMP VIEW rows AS
  SELECT note_id AS id, body AS text, vec AS embedding, created AS ts, author AS source,
         conversation AS session
  FROM src.notes;
SELECT h5mem_check('mem', id, text, embedding) AS skipped, count(*) AS rows
  FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, ts, source, session)
  SELECT id, text, embedding, ts, source, session FROM rows
  WHERE h5mem_check('mem', id, text, embedding) IS NULL;
COMMIT;
SELECT h5mem_checkpoint('mem');
