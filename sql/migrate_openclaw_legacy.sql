-- sql/migrate_openclaw_legacy.sql - OpenClaw's legacy per-agent memory index
-- (chunks with JSON embeddings) into an h5mem store, in plain SQL.
-- docs/MIGRATION.md, "OpenClaw, legacy per-agent file".
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_openclaw_legacy.sql
ATTACH 'file:main.sqlite?mode=ro' AS src;
-- dim: SELECT json_extract(value, '$.vectorDims') FROM src.meta WHERE key = 'memory_index_meta_v1';
CREATE VIRTUAL TABLE mem USING h5mem(path='agent.h5', dim=1536);
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, source, session, ts, meta)
  SELECT rowid, text, CASE WHEN embedding = '[]' THEN NULL ELSE embedding END, source,
         CASE WHEN source = 'sessions' THEN path END,
         CASE WHEN updated_at >= 100000000000 THEN updated_at / 1000 ELSE updated_at END,
         json_object('openclaw_id', id, 'path', path, 'start_line', start_line, 'end_line', end_line,
                     'hash', hash, 'model', model, 'updated_at', updated_at)
  FROM src.chunks WHERE trim(text) <> '';
COMMIT;
SELECT h5mem_checkpoint('mem');
