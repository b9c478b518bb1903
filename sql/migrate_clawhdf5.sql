-- sql/migrate_clawhdf5.sql - ClawhDF5's migration schema (memory_chunks,
-- float32 BLOB embeddings; entities and relations) into an h5mem store, in
-- plain SQL.  docs/MIGRATION.md, "ClawhDF5's migration schema".
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_clawhdf5.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them: the rows
-- read go into a temporary table with the reason each is skipped (deleted,
-- h5mem_check's; an id met before in the source: duplicate), the counts
-- are printed, and the rest written, then the graph.
ATTACH 'file:zeroclaw.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='zeroclaw.h5', dim=384);
CREATE TEMP TABLE rows AS
  SELECT *, CASE WHEN deleted THEN 'deleted'
                 ELSE h5mem_check('mem', id, text, embedding, source, session, tags) END AS skipped
  FROM (SELECT id, chunk AS text, embedding, source_channel AS source, session_id AS session, tags,
               CAST(floor(timestamp) AS INTEGER) AS ts,
               CASE WHEN typeof(timestamp) = 'real' AND timestamp <> CAST(timestamp AS INTEGER)
                    THEN json_object('timestamp', timestamp) END AS meta, deleted
        FROM src.memory_chunks ORDER BY id);
CREATE INDEX temp.rows_id ON rows(id);
UPDATE rows SET skipped = 'duplicate' WHERE skipped IS NULL
  AND rowid > (SELECT min(r.rowid) FROM rows AS r WHERE r.id = rows.id AND r.skipped IS NULL);
SELECT skipped, count(*) AS rows FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT INTO mem(id, text, embedding, source, session, tags, ts, meta)
  SELECT id, text, embedding, source, session, tags, ts, meta FROM rows WHERE skipped IS NULL ORDER BY rowid;
-- the graph: entities keep their ids; a relation gets its row's rowid, and
-- the migration's time when it has none
INSERT OR IGNORE INTO mem_entities(id, name, type, meta)
  SELECT id, name, type, CASE WHEN embedding_idx >= 0 THEN json_object('embedding_idx', embedding_idx) END
  FROM src.entities
  WHERE typeof(id) = 'integer' AND typeof(name) = 'text' AND name <> '' AND typeof(type) = 'text'
    AND instr(CAST(name AS BLOB), x'00') = 0 AND instr(CAST(type AS BLOB), x'00') = 0;
INSERT OR IGNORE INTO mem_relations(id, src, dst, type, weight, ts)
  SELECT r.rowid, r.src, r.tgt, r.relation, coalesce(r.weight, 1.0),
         coalesce(CAST(floor(r.timestamp) AS INTEGER), CAST(strftime('%s', 'now') AS INTEGER))
  FROM src.relations AS r
  WHERE typeof(r.src) = 'integer' AND typeof(r.tgt) = 'integer' AND typeof(r.relation) = 'text'
    AND r.relation <> '' AND typeof(r.weight) IN ('integer', 'real', 'null')
    AND r.src IN (SELECT id FROM mem_entities) AND r.tgt IN (SELECT id FROM mem_entities);
COMMIT;
SELECT h5mem_checkpoint('mem');
