-- sql/migrate_langgraph.sql - LangGraph's SqliteStore (store, store_vectors)
-- into an h5mem store, in plain SQL: one record per embedded field.
-- docs/MIGRATION.md, "LangGraph's SqliteStore".  h5mem_langgraph_text()
-- gives the text LangGraph embedded for a field ("text", "profile.bio",
-- "tags[*].0", "{a,b}.1", "$": the whole value as json.dumps(sort_keys=True)).
--   sqlite3 -cmd '.load ./h5mem' :memory: < sql/migrate_langgraph.sql
-- Bad rows are skipped and counted as h5mem_migrate() skips them: the rows
-- read go into a temporary table with the reason each is skipped (orphan:
-- the item is gone; stale_vector: the item was put again without the
-- field; h5mem_check's), the counts are printed, and the rest written.  A
-- vector older than its item's last put is written without it
-- (meta.stale_vector).
ATTACH 'file:langgraph.db?mode=ro' AS src;
-- (cosine: LangGraph ranks with 1 - vec_distance_cosine)
CREATE VIRTUAL TABLE mem USING h5mem(path='langgraph.h5', dim=1536);
CREATE TEMP TABLE rows AS
  SELECT *, CASE WHEN orphan THEN 'orphan' WHEN stale AND text IS NULL THEN 'stale_vector'
                 ELSE h5mem_check('mem', id, text, embedding, source) END AS skipped
  FROM (SELECT v.rowid AS id, s.key IS NULL AS orphan, v.updated_at < s.updated_at AS stale,
               h5mem_langgraph_text(s.value, v.field_name) AS text,
               CASE WHEN v.updated_at < s.updated_at THEN NULL ELSE v.embedding END AS embedding,
               v.prefix AS source, coalesce(s.updated_at, v.updated_at) AS ts,
               json_object('namespace', v.prefix, 'key', v.key, 'field', v.field_name,
                           'value', json(CAST(s.value AS TEXT)), 'created_at', s.created_at,
                           'updated_at', s.updated_at, 'expires_at', s.expires_at,
                           'ttl_minutes', s.ttl_minutes, 'embedded_at', v.updated_at) AS meta
        FROM src.store_vectors AS v LEFT JOIN src.store AS s ON s.prefix = v.prefix AND s.key = v.key
        ORDER BY v.rowid);
SELECT skipped, count(*) AS rows FROM rows GROUP BY 1 ORDER BY 1;  -- NULL: written
BEGIN;
INSERT INTO mem(id, text, embedding, source, ts, meta)
  SELECT id, text, embedding, source, ts,
         CASE WHEN stale THEN json_set(meta, '$.stale_vector', json('true')) ELSE meta END
  FROM rows WHERE skipped IS NULL ORDER BY rowid;
COMMIT;
SELECT h5mem_checkpoint('mem');
