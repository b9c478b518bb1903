-- vec_search and the KNN form in the sqlite3 shell (sql_shell.sh removes
-- the store files before each run).
.load ./h5mem
.headers off
.mode list
CREATE VIRTUAL TABLE mem USING h5mem(path='sql_shell_search.h5', dim=3);
INSERT INTO mem(id, text, embedding, source, ts) VALUES
  (1, 'east', '[1, 0, 0]', 'user', 100),
  (2, 'north', '[0, 1, 0]', 'agent', 200),
  (3, 'north-east', '[0.7, 0.7, 0]', 'user', 300),
  (4, 'no vector', NULL, 'user', 400),
  (5, 'west', '[-1, 0, 0]', 'user', 500);
SELECT id, text, round(distance, 4), round(score, 4) FROM vec_search('mem', '[1, 0.1, 0]', 3);
SELECT id FROM vec_search('mem', '[1, 0.1, 0]', 10) WHERE source = 'user' AND ts >= 300;
SELECT id FROM vec_search('mem', '[1, 0.1, 0]', 10) WHERE id IN (2, 4, 5);
SELECT id, round(distance, 4) FROM mem WHERE embedding MATCH '[0, 1, 0]' AND k = 2;
SELECT h5mem_checkpoint('mem');
DELETE FROM mem WHERE id = 3;
SELECT id FROM vec_search('mem', '[1, 0.1, 0]', 2);
SELECT count(*) FROM vec_search('mem', '[1, 0.1, 0]', 1000);
SELECT * FROM vec_search('mem', '[1, 0]', 2);
SELECT * FROM vec_search('nowhere', '[1, 0, 0]', 2);
