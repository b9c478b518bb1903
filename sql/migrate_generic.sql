-- sql/migrate_generic.sql - any table of text and embeddings into an h5mem
-- store, in plain SQL.  docs/MIGRATION.md, "Any table or query"; the same
-- with h5mem_migrate():
--   SELECT h5mem_migrate('notes.db', 'notes.h5', '{"table": "notes",
--     "columns": {"id": "note_id", "text": "body", "embedding": "vec", "ts": "created"}}');
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_generic.sql
ATTACH 'file:notes.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='notes.h5', dim=384);
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, ts, source, session)
  SELECT note_id, body, vec, created, author, conversation FROM src.notes;
COMMIT;
SELECT h5mem_checkpoint('mem');
