/*
** bench/bench_ephemeral.c - the ephemeral tier (an h5mem table with
** ephemeral=on, through prepared SQLite statements in this process)
** against a real Redis (redis-server, started here on a Unix socket and on
** loopback TCP, stopped at the end) through its C client hiredis, one
** request at a time and pipelined, on the same keys and values (issue 24).
**
**   apt-get install redis-server libhiredis-dev libsqlite3-dev
**   cc -O2 -o /tmp/bench_ephemeral bench/bench_ephemeral.c -lsqlite3 -lhiredis
**   /tmp/bench_ephemeral ./h5mem [ops]        # from the build directory
**
** Operations (ops of each, default 100000; keys "key:<i>", values 100
** bytes): SET with a TTL, GET of a key that is there, GET of one that is
** not, DELETE; SET with a 384-d float32 embedding (Redis: the 1536 bytes
** as the value); and on h5mem a nearest-neighbour query over 10,000
** records of 384-d (Redis 7 has no vector search).  Redis pays a socket
** round trip for each request that an in-process table does not: the
** table's latency is a function call's, Redis's a request's; both are
** what an application sees.  Each row: the mean time of an operation (µs)
** and operations a second; pipelined Redis sends them in batches of 100.
** Then two connections of this process sharing one table (a SET on one,
** a GET of that key on the other), against two Redis clients; and SETs
** into a table at its capacity (10,000, evict=lru), each evicting one.
*/
#define _GNU_SOURCE
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIM 384
#define NVEC 10000
#define PIPE 100

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static pid_t redis_pid; /* (stopped by die too) */

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_ephemeral: %s: %s\n", what, msg);
  if (redis_pid > 0) kill(redis_pid, SIGTERM);
  exit(1);
}

static void row(const char *system, const char *op, double secs, long n) {
  printf("| %s | %s | %.2f | %.0f |\n", system, op, secs / (double)n * 1e6, (double)n / secs);
  fflush(stdout);
}

static unsigned long long rng = 88172645463325252ull;
static float frand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0) * 2.0f - 1.0f;
}

/* ---- h5mem ------------------------------------------------------------------ */

static sqlite3_stmt *prep(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(sql, sqlite3_errmsg(db));
  return st;
}

static void step_done(sqlite3 *db, sqlite3_stmt *st) {
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
  }
  if (rc != SQLITE_DONE) die("step", sqlite3_errmsg(db));
  sqlite3_reset(st);
}

/* n SETs of keys key:0 .. key:<n-1> (value val, 100 bytes) through set. */
static void set_keys(sqlite3 *db, sqlite3_stmt *set, long n, const char *val) {
  char key[32];
  for (long i = 0; i < n; i++) {
    int kl = snprintf(key, sizeof key, "key:%ld", i);
    sqlite3_bind_text(set, 1, key, kl, SQLITE_STATIC); /* (rebound before each step) */
    sqlite3_bind_text(set, 2, val, 100, SQLITE_STATIC);
    step_done(db, set);
  }
}

static void bench_h5mem(const char *ext, long n, const char *val, float *embs) {
  sqlite3 *db;
  char *err = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) die("sqlite3_open", "failed");
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext, NULL, &err) != SQLITE_OK) die(ext, err);
  if (sqlite3_exec(db, "CREATE VIRTUAL TABLE kv USING h5mem(ephemeral=on, dim=384, ttl=600, key text primary key)",
                   NULL, NULL, &err) != SQLITE_OK)
    die("create", err);
  sqlite3_stmt *set = prep(db, "INSERT OR REPLACE INTO kv(key, text) VALUES (?1, ?2)");
  sqlite3_stmt *setv = prep(db, "INSERT OR REPLACE INTO kv(key, text, embedding) VALUES (?1, ?2, ?3)");
  sqlite3_stmt *get = prep(db, "SELECT text FROM kv WHERE key = ?1");
  sqlite3_stmt *del = prep(db, "DELETE FROM kv WHERE key = ?1");
  char key[32];
  double t0 = now_s();
  set_keys(db, set, n, val);
  row("h5mem, in-process SQL", "SET with TTL", now_s() - t0, n);
  long hits = 0;
  t0 = now_s();
  for (long i = 0; i < n; i++) {
    int kl = snprintf(key, sizeof key, "key:%ld", (i * 7919) % n);
    sqlite3_bind_text(get, 1, key, kl, SQLITE_STATIC);
    if (sqlite3_step(get) == SQLITE_ROW) hits += sqlite3_column_bytes(get, 0) == 100;
    sqlite3_reset(get);
  }
  row("h5mem, in-process SQL", "GET hit", now_s() - t0, n);
  if (hits != n) die("GET hit", "a key was missing");
  t0 = now_s();
  for (long i = 0; i < n; i++) {
    int kl = snprintf(key, sizeof key, "nokey:%ld", i);
    sqlite3_bind_text(get, 1, key, kl, SQLITE_STATIC);
    if (sqlite3_step(get) == SQLITE_ROW) die("GET miss", "a row");
    sqlite3_reset(get);
  }
  row("h5mem, in-process SQL", "GET miss", now_s() - t0, n);
  t0 = now_s();
  for (long i = 0; i < n; i++) {
    int kl = snprintf(key, sizeof key, "key:%ld", i);
    sqlite3_bind_text(del, 1, key, kl, SQLITE_STATIC);
    step_done(db, del);
  }
  row("h5mem, in-process SQL", "DELETE", now_s() - t0, n);
  t0 = now_s();
  for (long i = 0; i < n; i++) {
    int kl = snprintf(key, sizeof key, "vec:%ld", i % NVEC);
    sqlite3_bind_text(setv, 1, key, kl, SQLITE_STATIC);
    sqlite3_bind_text(setv, 2, val, 100, SQLITE_STATIC);
    sqlite3_bind_blob(setv, 3, embs + (size_t)(i % NVEC) * DIM, DIM * 4, SQLITE_STATIC);
    step_done(db, setv);
  }
  row("h5mem, in-process SQL", "SET with a 384-d embedding", now_s() - t0, n);
  /* a nearest-neighbour query over the 10,000 records now there */
  sqlite3_stmt *knn = prep(db, "SELECT id, distance FROM vec_search('kv', ?1, 10)");
  float q[DIM];
  long nq = 200;
  t0 = now_s();
  for (long i = 0; i < nq; i++) {
    for (int d = 0; d < DIM; d++) q[d] = frand();
    sqlite3_bind_blob(knn, 1, q, sizeof q, SQLITE_STATIC);
    int got = 0;
    while (sqlite3_step(knn) == SQLITE_ROW) got++;
    sqlite3_reset(knn);
    if (got != 10) die("vec_search", "not 10 rows");
  }
  row("h5mem, in-process SQL", "10K x 384 nearest 10 (exact)", now_s() - t0, nq);
  sqlite3_finalize(set);
  sqlite3_finalize(setv);
  sqlite3_finalize(get);
  sqlite3_finalize(del);
  sqlite3_finalize(knn);
  sqlite3_close(db);
}

static sqlite3 *open_ext(const char *ext, const char *create) {
  sqlite3 *db;
  char *err = NULL;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) die("sqlite3_open", "failed");
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext, NULL, &err) != SQLITE_OK) die(ext, err);
  if (sqlite3_exec(db, create, NULL, NULL, &err) != SQLITE_OK) die("create", err);
  return db;
}

/* Two connections of the process sharing one store: a SET on one, then a
** GET of that key on the other (which first replays the SET's frame); and
** SETs past a capacity of 10,000 (each commit evicts the least recently
** used). */
static void bench_h5mem_shared(const char *ext, long n, const char *val) {
  const char *create = "CREATE VIRTUAL TABLE kv2 USING h5mem(ephemeral=on, dim=384, ttl=600, key text primary key)";
  sqlite3 *a = open_ext(ext, create), *b = open_ext(ext, create);
  sqlite3_stmt *set = prep(a, "INSERT OR REPLACE INTO kv2(key, text) VALUES (?1, ?2)");
  sqlite3_stmt *get = prep(b, "SELECT text FROM kv2 WHERE key = ?1");
  char key[32];
  long hits = 0;
  double t0 = now_s();
  for (long i = 0; i < n; i++) {
    int kl = snprintf(key, sizeof key, "key:%ld", i);
    sqlite3_bind_text(set, 1, key, kl, SQLITE_STATIC);
    sqlite3_bind_text(set, 2, val, 100, SQLITE_STATIC);
    step_done(a, set);
    sqlite3_bind_text(get, 1, key, kl, SQLITE_STATIC);
    if (sqlite3_step(get) == SQLITE_ROW) hits += sqlite3_column_bytes(get, 0) == 100;
    sqlite3_reset(get);
  }
  row("h5mem, two connections", "SET on one, GET on the other", now_s() - t0, n);
  if (hits != n) die("SET then GET", "the other connection missed a key");
  sqlite3_finalize(set);
  sqlite3_finalize(get);
  sqlite3_close(a);
  sqlite3_close(b);
  sqlite3 *c = open_ext(ext, "CREATE VIRTUAL TABLE cap USING h5mem(ephemeral=on, dim=384, capacity=10000, "
                              "evict=lru, key text primary key)");
  set = prep(c, "INSERT OR REPLACE INTO cap(key, text) VALUES (?1, ?2)");
  t0 = now_s();
  set_keys(c, set, n, val);
  row("h5mem, in-process SQL", "SET past capacity=10000 (lru: one evicted each)", now_s() - t0, n);
  sqlite3_stmt *cnt = prep(c, "SELECT count(*) FROM cap");
  if (sqlite3_step(cnt) != SQLITE_ROW || sqlite3_column_int64(cnt, 0) != (n < 10000 ? n : 10000))
    die("capacity", "not the capacity's count");
  sqlite3_finalize(cnt);
  sqlite3_finalize(set);
  sqlite3_close(c);
}

/* ---- Redis ------------------------------------------------------------------ */

static void reply_ok(redisContext *c, redisReply *r, const char *what) {
  if (!r) die(what, c->errstr);
  if (r->type == REDIS_REPLY_ERROR) die(what, r->str);
  freeReplyObject(r);
}

static void bench_redis(redisContext *c, const char *how, long n, const char *val, float *embs, int pipelined) {
  char key[32], name[64];
  snprintf(name, sizeof name, "Redis 7, %s%s", how, pipelined ? ", pipelined" : "");
  reply_ok(c, redisCommand(c, "FLUSHALL"), "FLUSHALL");
  const char *ops[5] = {"SET with TTL", "GET hit", "GET miss", "DELETE", "SET with a 384-d embedding"};
  for (int op = 0; op < 5; op++) {
    double t0 = now_s();
    for (long i = 0; i < n;) {
      long batch = pipelined ? (n - i < PIPE ? n - i : PIPE) : 1;
      for (long j = 0; j < batch; j++) {
        long k = i + j;
        switch (op) {
        case 0:
          snprintf(key, sizeof key, "key:%ld", k);
          redisAppendCommand(c, "SET %s %b EX 600", key, val, (size_t)100);
          break;
        case 1:
          snprintf(key, sizeof key, "key:%ld", (k * 7919) % n);
          redisAppendCommand(c, "GET %s", key);
          break;
        case 2:
          snprintf(key, sizeof key, "nokey:%ld", k);
          redisAppendCommand(c, "GET %s", key);
          break;
        case 3:
          snprintf(key, sizeof key, "key:%ld", k);
          redisAppendCommand(c, "DEL %s", key);
          break;
        default:
          snprintf(key, sizeof key, "vec:%ld", k % NVEC);
          redisAppendCommand(c, "SET %s %b EX 600", key, (const char *)(embs + (size_t)(k % NVEC) * DIM),
                             (size_t)DIM * 4);
        }
      }
      for (long j = 0; j < batch; j++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK) die(ops[op], c->errstr);
        if (op == 1 && (r->type != REDIS_REPLY_STRING || r->len != 100)) die("GET hit", "a key was missing");
        if (op == 2 && r->type != REDIS_REPLY_NIL) die("GET miss", "a value");
        reply_ok(c, r, ops[op]);
      }
      i += batch;
    }
    row(name, ops[op], now_s() - t0, n);
  }
}

/* A SET on one client, then a GET of that key on another. */
static void bench_redis_two(redisContext *c1, redisContext *c2, const char *how, long n, const char *val) {
  char key[32], name[64];
  snprintf(name, sizeof name, "Redis 7, %s, two clients", how);
  reply_ok(c1, redisCommand(c1, "FLUSHALL"), "FLUSHALL");
  double t0 = now_s();
  for (long i = 0; i < n; i++) {
    snprintf(key, sizeof key, "key:%ld", i);
    reply_ok(c1, redisCommand(c1, "SET %s %b EX 600", key, val, (size_t)100), "SET");
    redisReply *r = redisCommand(c2, "GET %s", key);
    if (!r || r->type != REDIS_REPLY_STRING || r->len != 100) die("SET then GET", "the other client missed a key");
    freeReplyObject(r);
  }
  row(name, "SET on one, GET on the other", now_s() - t0, n);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_ephemeral ./h5mem [ops]\n");
    return 2;
  }
  long n = argc > 2 ? atol(argv[2]) : 100000;
  char val[101];
  for (int i = 0; i < 100; i++) val[i] = (char)('a' + i % 26);
  val[100] = 0;
  float *embs = malloc((size_t)NVEC * DIM * sizeof *embs);
  for (size_t i = 0; i < (size_t)NVEC * DIM; i++) embs[i] = frand();

  /* a Redis of our own: a Unix socket and a loopback port, no persistence */
  char dir[] = "/tmp/bench_redis_XXXXXX", sock[128], port[16];
  if (!mkdtemp(dir)) die("mkdtemp", "failed");
  snprintf(sock, sizeof sock, "%s/redis.sock", dir);
  snprintf(port, sizeof port, "%d", 26379 + (int)(getpid() % 1000));
  pid_t pid = fork();
  redis_pid = pid;
  if (pid == 0) {
    execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--unixsocket", sock,
           "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no", "--loglevel", "warning",
           "--logfile", "redis.log",
           (char *)NULL);
    _exit(127);
  }
  redisContext *cu = NULL, *ct = NULL;
  for (int i = 0; i < 100 && !(cu && !cu->err); i++) {
    if (cu) redisFree(cu);
    usleep(50000);
    cu = redisConnectUnix(sock);
  }
  if (!cu || cu->err) die("redis-server", "did not start (apt-get install redis-server)");
  ct = redisConnect("127.0.0.1", atoi(port));
  if (!ct || ct->err) die("redis over TCP", ct ? ct->errstr : "no context");
  redisReply *info = redisCommand(cu, "INFO server");
  char ver[32] = "?";
  const char *p = info && info->str ? strstr(info->str, "redis_version:") : NULL;
  if (p) sscanf(p + 14, "%31s", ver);
  if (info) freeReplyObject(info);

  printf("# %ld operations each (nearest-neighbour: 200 queries); redis-server %s; SQLite %s\n\n", n, ver,
         sqlite3_libversion());
  printf("| system | operation | µs per op | ops per second |\n|---|---|---:|---:|\n");
  bench_h5mem(argv[1], n, val, embs);
  bench_h5mem_shared(argv[1], n, val);
  bench_redis(cu, "Unix socket", n, val, embs, 0);
  bench_redis(cu, "Unix socket", n, val, embs, 1);
  bench_redis(ct, "loopback TCP", n, val, embs, 0);
  bench_redis(ct, "loopback TCP", n, val, embs, 1);
  redisContext *cu2 = redisConnectUnix(sock);
  if (!cu2 || cu2->err) die("a second Redis client", cu2 ? cu2->errstr : "no context");
  bench_redis_two(cu, cu2, "Unix socket", n, val);
  redisFree(cu2);
  redisFree(cu);
  redisFree(ct);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  unlink(sock);
  char logf[160];
  snprintf(logf, sizeof logf, "%s/redis.log", dir);
  unlink(logf);
  rmdir(dir);
  free(embs);
  return 0;
}
