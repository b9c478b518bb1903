-- An ephemeral store in the sqlite3 shell (issue 24): no file, key-value
-- use by a text primary key, expiry by a stopped clock, capacity, a
-- search, a promotion into a persistent store (sql_shell.sh removes
-- the files before each run), and a second connection sharing it.
.load ./h5mem
.headers off
.mode list
CREATE VIRTUAL TABLE scratch USING h5mem(ephemeral=on, dim=3, ttl=600, capacity=3, key text primary key);
SELECT h5mem_clock('scratch', 1800000000);
INSERT OR REPLACE INTO scratch(text, embedding, key) VALUES ('user prefers tea', '[1, 0, 0]', 'pref:drink');
INSERT OR REPLACE INTO scratch(text, embedding, key) VALUES ('user prefers coffee', '[0.9, 0.1, 0]', 'pref:drink');
INSERT OR REPLACE INTO scratch(text, embedding, key, expires_at) VALUES ('meeting at noon', '[0, 1, 0]', 'plan:today', 1800000060);
SELECT key, text, expires_at FROM scratch ORDER BY key;
SELECT s.key FROM vec_search('scratch', '[0, 1, 0.1]', 1) v JOIN scratch s ON s.id = v.id;
SELECT h5mem_clock('scratch', 1800000060);
SELECT key FROM scratch ORDER BY key;
INSERT INTO scratch(text, embedding, key) VALUES ('a', '[0, 0, 1]', 'x:1'), ('b', '[0, 0, 1]', 'x:2'), ('c', '[0, 0, 1]', 'x:3');
SELECT count(*), group_concat(key) FROM (SELECT key FROM scratch ORDER BY key);
DELETE FROM scratch WHERE key = 'x:3';
CREATE VIRTUAL TABLE mem USING h5mem(path='sql_shell_promote.h5', dim=3, key text);
SELECT h5mem_promote('scratch', 'mem', 'key LIKE ''x:%''');
SELECT key, text FROM mem ORDER BY id;
SELECT count(*) FROM scratch;
SELECT h5mem_checkpoint('scratch');
-- a second connection of the shell (.connection 1) shares the store by its
-- name: it reads what the first wrote and the first reads what it writes
INSERT INTO scratch(text, embedding, key) VALUES ('from the first', '[1, 1, 0]', 'c:0');
.connection 1
.load ./h5mem
CREATE VIRTUAL TABLE scratch USING h5mem(ephemeral=on, dim=3, ttl=600, capacity=3, key text primary key);
SELECT key, text FROM scratch ORDER BY key;
INSERT INTO scratch(text, embedding, key) VALUES ('from the second', '[1, 0, 1]', 'c:1');
.connection 0
SELECT key, text FROM scratch ORDER BY key;
SELECT json_extract(h5mem_index('scratch'), '$.log.connections');
