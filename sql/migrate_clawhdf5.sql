-- sql/migrate_clawhdf5.sql - ClawhDF5's migration schema (memory_chunks,
-- float32 BLOB embeddings; entities and relations) into an h5mem store, in
-- plain SQL.  docs/MIGRATION.md, "ClawhDF5's migration schema".
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_clawhdf5.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them
-- (h5mem_check names the reason; deleted rows are left out); the rest are
-- written, then the graph.
ATTACH 'file:zeroclaw.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='zeroclaw.h5', dim=384);
CREATE TEMP VIEW rows AS
  SELECT id, chunk AS text, embedding, source_channel AS source, session_id AS session, tags,
         CAST(floor(timestamp) AS INTEGER) AS ts,
         CASE WHEN typeof(timestamp) = 'real' AND timestamp <> CAST(timestamp AS INTEGER)
              THEN json_object('timestamp', timestamp) END AS meta
  FROM src.memory_chunks WHERE NOT deleted;
SELECT 'deleted' AS skipped, count(*) AS rows FROM src.memory_chunks WHERE deleted
UNION ALL
SELECT * FROM (SELECT h5mem_check('mem', id, text, embedding), count(*) FROM rows GROUP BY 1 ORDER BY 1);
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, source, session, tags, ts, meta)
  SELECT id, text, embedding, source, session, tags, ts, meta FROM rows
  WHERE h5mem_check('mem', id, text, embedding) IS NULL;
-- the graph: entities keep their ids; a relation gets its row's rowid
INSERT OR IGNORE INTO mem_entities(id, name, type, meta)
  SELECT id, name, type, CASE WHEN embedding_idx >= 0 THEN json_object('embedding_idx', embedding_idx) END
  FROM src.entities
  WHERE typeof(id) = 'integer' AND typeof(name) = 'text' AND name <> '' AND typeof(type) = 'text'
    AND instr(CAST(name AS BLOB), x'00') = 0 AND instr(CAST(type AS BLOB), x'00') = 0;
INSERT OR IGNORE INTO mem_relations(id, src, dst, type, weight, ts)
  SELECT r.rowid, r.src, r.tgt, r.relation, coalesce(r.weight, 1.0), CAST(floor(r.timestamp) AS INTEGER)
  FROM src.relations AS r
  WHERE typeof(r.src) = 'integer' AND typeof(r.tgt) = 'integer' AND typeof(r.relation) = 'text'
    AND r.relation <> '' AND typeof(r.weight) IN ('integer', 'real', 'null')
    AND r.src IN (SELECT id FROM mem_entities) AND r.tgt IN (SELECT id FROM mem_entities);
COMMIT;
SELECT h5mem_checkpoint('mem');
