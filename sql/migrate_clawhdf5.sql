-- sql/migrate_clawhdf5.sql - ClawhDF5's migration schema (memory_chunks,
-- float32 BLOB embeddings) into an h5mem store, in plain SQL.
-- docs/MIGRATION.md, "ClawhDF5's migration schema"; h5mem_migrate() does the
-- same, skipping bad rows instead of stopping, and reports the graph.
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_clawhdf5.sql
ATTACH 'file:zeroclaw.db?mode=ro' AS src;
CREATE VIRTUAL TABLE mem USING h5mem(path='zeroclaw.h5', dim=384);
BEGIN;
INSERT OR IGNORE INTO mem(id, text, embedding, source, session, tags, ts, meta)
  SELECT id, chunk, embedding, source_channel, session_id, tags, timestamp,
         CASE WHEN timestamp <> CAST(timestamp AS INTEGER) THEN json_object('timestamp', timestamp) END
  FROM src.memory_chunks WHERE deleted = 0;
COMMIT;
SELECT h5mem_checkpoint('mem');
-- entities and relations wait for the store's graph (issue 8)
