-- sql/migrate_openclaw_legacy.sql - OpenClaw's legacy per-agent memory index
-- (chunks with JSON embeddings) into an h5mem store, in plain SQL.
-- docs/MIGRATION.md, "OpenClaw, legacy per-agent file".
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_openclaw_legacy.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them: the rows
-- read go into a temporary table with the reason each is skipped
-- (h5mem_check's), the counts are printed, and the rest written.  (A file
-- without chunks.source, as the oldest have: 'memory' for source; one with
-- chunks.dims: add 'dims', dims to meta, as h5mem_migrate() does.)
ATTACH 'file:main.sqlite?mode=ro' AS src;
-- dim: SELECT json_extract(value, '$.vectorDims') FROM src.meta WHERE key = 'memory_index_meta_v1';
-- (cosine: OpenClaw ranks with vec_distance_cosine)
CREATE VIRTUAL TABLE mem USING h5mem(path='agent.h5', dim=1536);
CREATE TEMP TABLE rows AS
  SELECT *, h5mem_check('mem', id, text, embedding, source, session, meta) AS skipped
  FROM (SELECT rowid AS id, text, CASE WHEN embedding = '[]' THEN NULL ELSE embedding END AS embedding,
               source, CASE WHEN source = 'sessions' THEN path END AS session,
               CASE WHEN updated_at >= 100000000000 THEN updated_at / 1000 ELSE updated_at END AS ts,
               json_object('openclaw_id', id, 'path', path, 'start_line', start_line, 'end_line', end_line,
                           'hash', hash, 'model', model, 'updated_at', updated_at) AS meta
        FROM src.chunks ORDER BY rowid);
SELECT skipped, count(*) AS rows FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT INTO mem(id, text, embedding, source, session, ts, meta)
  SELECT id, text, embedding, source, session, ts, meta FROM rows WHERE skipped IS NULL ORDER BY rowid;
COMMIT;
SELECT h5mem_checkpoint('mem');
