-- sql/migrate_openclaw.sql - OpenClaw's memory_index_* tables into an h5mem
-- store, in plain SQL.  docs/MIGRATION.md, "OpenClaw, current".
-- memory_index_chunks.embedding is float64 little-endian, which SQL cannot
-- turn into float32; memory_index_chunks_vec (vec0) holds the same vectors
-- as float32, so sqlite-vec is loaded to read them.  h5mem_migrate() reads
-- the float64 BLOBs directly and needs no sqlite-vec.
--   sqlite3 -cmd '.load ./h5mem' -cmd '.load ./vec0' :memory: < sql/migrate_openclaw.sql
ATTACH 'file:openclaw-agent.sqlite?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='agent.h5', dim=1536);
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, source, session, ts, meta)
  SELECT c.chunk_rowid, c.text, v.embedding, c.source,
         CASE WHEN c.source = 'sessions' THEN c.path END, c.updated_at / 1000,
         json_object('openclaw_id', c.id, 'path', c.path, 'start_line', c.start_line,
                     'end_line', c.end_line, 'hash', c.hash, 'model', c.model, 'updated_at', c.updated_at)
  FROM src.memory_index_chunks AS c LEFT JOIN src.memory_index_chunks_vec AS v ON v.id = c.id
  WHERE trim(c.text) <> '';
COMMIT;
SELECT h5mem_checkpoint('mem');
