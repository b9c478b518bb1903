-- The h5mem table in the sqlite3 shell: create, write, transactions,
-- errors, checkpoint, close and reopen (sql_shell.sh removes the files
-- before each run).
.load ./h5mem
.headers off
.mode list
CREATE VIRTUAL TABLE mem USING h5mem(path='sql_shell_store.h5', dim=3, storage=float16);
INSERT INTO mem(text, embedding, source, ts) VALUES ('first', '[0.1, 0.2, 0.3]', 'user', '2026-01-02T03:04:05Z');
INSERT INTO mem(text, embedding, source, ts, meta) VALUES ('second', vec_f32('[1, 0, 0]'), 'agent', 1767000000, '{"a": [1, 2]}');
SELECT id, text, vec_to_json(embedding), source, ts, meta FROM mem ORDER BY id;
-- float16 storage: 0.1 reads back as the nearest half
SELECT vec_to_json(embedding, 1) FROM mem WHERE id = 1;
BEGIN;
INSERT INTO mem(text) VALUES ('rolled back');
SELECT count(*) FROM mem;
ROLLBACK;
SELECT count(*) FROM mem;
BEGIN;
INSERT INTO mem(id, text) VALUES (10, 'ten');
SAVEPOINT a;
DELETE FROM mem WHERE id = 1;
ROLLBACK TO a;
UPDATE mem SET text = 'TEN', access_count = 3 WHERE id = 10;
COMMIT;
SELECT id, text, access_count FROM mem ORDER BY id;
INSERT INTO mem(id, text) VALUES (10, 'dup');
INSERT OR IGNORE INTO mem(id, text) VALUES (10, 'ignored');
INSERT OR REPLACE INTO mem(id, text) VALUES (2, 'replaced');
INSERT INTO mem(text, embedding) VALUES ('bad', '[1, 2]');
INSERT INTO mem(text, meta) VALUES ('bad', '{oops}');
INSERT INTO mem(mem) VALUES ('vacuum');
SELECT id, text FROM mem ORDER BY id;
SELECT h5mem_checkpoint('mem');
INSERT INTO mem(text) VALUES ('after checkpoint');
DROP TABLE mem;
CREATE VIRTUAL TABLE again USING h5mem(path='sql_shell_store.h5', dim=4);
CREATE VIRTUAL TABLE again USING h5mem(path='sql_shell_store.h5');
SELECT id, text, source FROM again ORDER BY id;
SELECT count(*) FROM h5_ls('sql_shell_store.h5') WHERE path LIKE '/memories/%';
