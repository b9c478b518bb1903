-- sql/migrate_openclaw.sql - OpenClaw's memory_index_* tables into an h5mem
-- store, in plain SQL.  docs/MIGRATION.md, "OpenClaw, current".
-- memory_index_chunks.embedding is float64 little-endian, which SQL cannot
-- turn into float32; memory_index_chunks_vec (vec0) holds the same vectors
-- as float32, so sqlite-vec is loaded to read them.  h5mem_migrate() reads
-- the float64 BLOBs directly and needs no sqlite-vec.  OpenClaw 2026.8 and
-- later keep each chunk's recall metadata and provenance in side tables
-- (drop their joins and members for an older file).
--   sqlite3 -cmd '.load ./h5mem' -cmd '.load ./vec0' :memory: < sql/migrate_openclaw.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them: the rows
-- read go into a temporary table with the reason each is skipped
-- (h5mem_check's), the counts are printed, and the rest written.
ATTACH 'file:openclaw-agent.sqlite?mode=ro' AS src;
-- dim: SELECT json_extract(value, '$.vectorDims') FROM src.memory_index_meta WHERE key = 'memory_index_meta_v1';
-- (cosine: OpenClaw ranks with vec_distance_cosine)
CREATE VIRTUAL TABLE mem USING h5mem(path='agent.h5', dim=1536);
CREATE TEMP TABLE rows AS
  SELECT *, h5mem_check('mem', id, text, embedding, source, session, meta) AS skipped
  FROM (SELECT c.chunk_rowid AS id, c.text, v.embedding, c.source,
               CASE WHEN c.source = 'sessions' THEN c.path END AS session,
               CASE WHEN c.updated_at >= 100000000000 THEN c.updated_at / 1000 ELSE c.updated_at END AS ts,
               r.importance,
               json_object('openclaw_id', c.id, 'path', c.path, 'start_line', c.start_line,
                           'end_line', c.end_line, 'hash', c.hash, 'model', c.model, 'updated_at', c.updated_at,
                           'triggers', r.triggers, 'project_key', r.project_key,
                           'provenance', CASE WHEN p.chunk_id IS NOT NULL THEN
                             json_object('origin_class', p.origin_class, 'session_kind', p.session_kind,
                                         'observed_at', p.observed_at, 'supersedes_key', p.supersedes_key) END)
                 AS meta
        FROM src.memory_index_chunks AS c
        LEFT JOIN src.memory_index_chunks_vec AS v ON v.id = c.id
        LEFT JOIN src.memory_index_chunk_recall_metadata AS r ON r.chunk_id = c.id
        LEFT JOIN src.memory_index_chunk_provenance AS p ON p.chunk_id = c.id
        ORDER BY c.chunk_rowid);
SELECT skipped, count(*) AS rows FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT INTO mem(id, text, embedding, source, session, ts, importance, meta)
  SELECT id, text, embedding, source, session, ts, importance, meta FROM rows WHERE skipped IS NULL
  ORDER BY rowid;
COMMIT;
SELECT h5mem_checkpoint('mem');
