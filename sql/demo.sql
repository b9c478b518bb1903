-- h5mem demo: run with `make demo` (or: sqlite3 :memory: < sql/demo.sql
-- from the build directory).  It grows with every capability; today it
-- shows the extension's identity and its vector functions.
.load ./h5mem
.headers on
.mode box

.print '== what is loaded'
SELECT h5mem_version() AS version,
       json_extract(h5mem_info(), '$.simd') AS simd_in_use,
       json_extract(h5mem_info(), '$.sqlite') AS sqlite;

.print '== vectors: JSON in, float32 / float16 BLOBs out'
SELECT vec_to_json(vec_f32('[0.1, 0.2, 0.3]')) AS as_json,
       vec_to_json(vec_f32('[0.1, 0.2, 0.3]'), 1) AS exact_json,
       length(vec_f32('[0.1, 0.2, 0.3]')) AS f32_bytes,
       length(vec_f16('[0.1, 0.2, 0.3]')) AS f16_bytes,
       vec_to_json(vec_f16('[0.1, 0.2, 0.3]'), 1) AS f16_rounded;

.print '== a few memories with (toy, 4-d) embeddings, ranked against a query'
CREATE TEMP TABLE memories(id INTEGER PRIMARY KEY, text TEXT, emb BLOB);
INSERT INTO memories(text, emb) VALUES
  ('Alice likes hiking in the Alps',         vec_normalize('[0.9, 0.1, 0.0, 0.2]')),
  ('We went hiking near Chamonix in June',   vec_normalize('[0.8, 0.3, 0.1, 0.1]')),
  ('The build broke on the ARM runner',      vec_normalize('[0.0, 0.1, 0.9, 0.3]')),
  ('Bob prefers tea to coffee',              vec_normalize('[0.1, 0.9, 0.0, 0.1]'));
SELECT id, text,
       round(vec_distance_cosine(emb, '[1, 0.2, 0, 0.1]'), 4) AS cosine,
       round(vec_distance_l2(emb, vec_normalize('[1, 0.2, 0, 0.1]')), 4) AS l2,
       round(vec_dot(emb, vec_normalize('[1, 0.2, 0, 0.1]')), 4) AS dot
  FROM memories
 ORDER BY cosine
 LIMIT 3;

.print '== float16 storage halves the bytes; vec_as_f16 reads it back'
CREATE TEMP TABLE memories16 AS SELECT id, text, vec_f16(emb) AS emb FROM memories;
SELECT id, length(emb) AS bytes,
       round(vec_distance_cosine(vec_as_f16(emb), '[1, 0.2, 0, 0.1]'), 4) AS cosine
  FROM memories16 ORDER BY cosine LIMIT 3;
