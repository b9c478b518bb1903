-- An ephemeral store in the sqlite3 shell (issue 24): no file, key-value
-- use by a text primary key, expiry by a stopped clock, capacity, a
-- search, and a promotion into a persistent store (sql_shell.sh removes
-- the files before each run).
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
