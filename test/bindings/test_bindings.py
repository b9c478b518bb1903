"""The binding matrix: h5mem from every SQLite binding Debian packages.

One plan of statements (made here: make_plan) is run by a short script per
binding (bind_*, BindJava.java), each on a fresh store: create, insert, graph, searches,
checkpoint, reopen, again. Every binding's output must equal Python's byte
for byte, and Python's must match answers computed here without h5mem.

A binding whose toolchain or package is missing is skipped (a failure with
H5MEM_REQUIRE_BINDINGS=1). Exit: 0 pass, 77 all skipped, 1 fail.
    test_bindings.py [--keep] [--plan] [BINDING...]
"""
import hashlib
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("H5MEM_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
EXT = os.path.abspath(os.environ.get("H5MEM_EXT") or os.path.join(SRCDIR, "h5mem"))
PRELOAD = os.environ.get("H5MEM_PRELOAD", "")
REQUIRE = os.environ.get("H5MEM_REQUIRE_BINDINGS") == "1"
CACHE = os.path.join(tempfile.gettempdir(), "h5mem-bindings-cache")
CARGO = shutil.which("cargo") or (os.path.expanduser("~/.cargo/bin/cargo")
                                  if os.path.exists(os.path.expanduser("~/.cargo/bin/cargo")) else None)

# ------------------------------------------------------------- the data
DIM = 4
T0 = 1700000000
MEMS = {  # id: text, embedding, source, ts, importance
    1: ("alice likes green tea in the garden", [1, 0, 0, 0], "user", T0 + 10, None),
    2: ("bob drinks black coffee every morning", [0, 1, 0, 0], "user", T0 + 20, 0.75),
    3: ("the garden needs water after the heat wave", [0.75, 0.5, 0, 0.25], "agent", T0 + 30, None),
    4: ("coffee and tea at the meeting with alice and bob", [0.5, 0.5, 0.5, 0.5], "user", T0 + 40, None),
    5: ("a quiet evening at the café by the river", [0, 0, 1, 0.25], "web", T0 + 50, 0.125),
    6: ("bob planted tomatoes in the garden", [0.5, 0, 0.25, 1], "agent", T0 + 60, None),
}
NEW_MEM = (7, "alice waters the tomatoes before her coffee", [0.25, 0.75, 0, 0.5], "user", T0 + 70, None)
ENTS = {1: ("Alice", "person", '["Al"]'), 2: ("Bob", "person", None), 3: ("Garden", "place", None),
        4: ("Tea", "drink", None), 5: ("Coffee", "drink", None)}
RELS = {1: (1, 2, "knows"), 2: (2, 3, "tends"), 3: (1, 4, "likes"), 4: (3, 4, "grows"), 5: (2, 5, "drinks")}
NEW_REL = (6, 4, 5, "pairs_with")
MENTIONS = [(1, 1), (1, 4), (2, 2), (2, 5), (3, 3), (4, 1), (4, 4), (4, 5), (4, 2), (6, 2), (6, 3)]
Q1 = [0.875, 0.25, 0.125, 0.25]
Q2 = [0.125, 0.25, 1, 0.5]
Q3 = [0.25, 1, 0.125, 0]


# ------------------------------------------------------------- answers without h5mem
def cos(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def tokens(s):  # unicode61, remove_diacritics 1
    s = "".join(c for c in unicodedata.normalize("NFD", s.lower()) if not unicodedata.combining(c))
    return re.findall(r"[^\W_]+", s)


def distinct(sorted_vals, what):  # the data must not make near ties
    for a, b in zip(sorted_vals, sorted_vals[1:]):
        assert abs(a - b) > 1e-4, f"near tie in {what}: {a} {b}"


class Model:
    def __init__(self):
        self.mems = dict(MEMS)
        self.ents = dict(ENTS)
        self.rels = dict(RELS)
        self.mentions = list(MENTIONS)

    def vec(self, q, k):
        r = sorted(((1 - cos(q, m[1]), cos(q, m[1]), i, m[0]) for i, m in self.mems.items()))
        distinct([x[0] for x in r], "vec")
        return [(i, d, s, t) for d, s, i, t in r[:k]]

    def bm25(self, query):
        docs = {i: tokens(m[0]) for i, m in self.mems.items()}
        n_docs, avgdl = len(docs), sum(map(len, docs.values())) / len(docs)
        out = {}
        for term in set(tokens(query)):
            n = sum(term in d for d in docs.values())
            idf = math.log((n_docs - n + 0.5) / (n + 0.5))
            idf = idf if idf > 0 else 1e-6
            for i, d in docs.items():
                f = d.count(term)
                if f:
                    out[i] = out.get(i, 0) + idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len(d) / avgdl))
        return out

    def bm25_top(self, query, k):
        r = sorted(((-s, i) for i, s in self.bm25(query).items()))
        distinct([x[0] for x in r], "bm25")
        return [(i, -s, self.mems[i][0]) for s, i in r[:k]]

    def hybrid(self, text, q, k, allowed=None):
        ids = [i for i in self.mems if allowed is None or i in allowed]
        vs = {i: cos(q, self.mems[i][1]) for i in ids} if q else {}
        ks = {i: s for i, s in self.bm25(text).items() if i in ids} if text else {}
        union = set(vs) | set(ks)
        kall = [ks.get(i, 0.0) for i in union]
        vmin, vmax = min(vs.values(), default=0), max(vs.values(), default=0)
        kmin, kmax = min(kall), max(kall)
        rows = []
        for i in union:
            vn = 0 if i not in vs else (vs[i] - vmin) / (vmax - vmin) if vmax > vmin else 1.0
            kk = ks.get(i, 0.0)
            kn = (kk - kmin) / (kmax - kmin) if kmax > kmin else 1.0 if kmax > 0 else 0.0
            rows.append((0.4 * vn + 0.6 * kn, i))
        rows.sort(key=lambda r: (-r[0], r[1]))
        distinct([r[0] for r in rows[:k + 1]], "hybrid")
        return [(i, s, vs.get(i), ks.get(i, 0.0) if text else None) for s, i in rows[:k]]

    def bfs(self, start, depth, direction="out"):
        edges = {}
        for rid, (s, d, t) in self.rels.items():
            if s in self.ents and d in self.ents:
                if direction in ("out", "both"):
                    edges.setdefault(s, []).append((d, rid, t))
                if direction in ("in", "both"):
                    edges.setdefault(d, []).append((s, rid, t))
        seen, out, frontier = {start}, [(start, self.ents[start][0], 0, [start], None, None)], [[start]]
        for dep in range(1, depth + 1):
            nxt = []
            for path in frontier:
                for e, rid, t in sorted(edges.get(path[-1], [])):
                    if e not in seen:
                        seen.add(e)
                        nxt.append(path + [e])
                        out.append((e, self.ents[e][0], dep, path + [e], t, rid))
            frontier = nxt
        return [(i, n, d, json.dumps(p, separators=(",", ":")), t, r) for i, n, d, p, t, r in out]

    def reach(self, start, depth):
        return {r[0] for r in self.bfs(start, depth)}


# ------------------------------------------------------------- the plan
# One step a line, fields split by tabs: KIND NAME FORMAT SQL PARAM...
#   KIND: exec (rows dropped), query (printed as '== NAME', then a row a line),
#         reopen (close the connection, open a new one, load h5mem).
#   FORMAT: a letter a column: i integer, f real (printf %.5e, -0 as 0,
#         exponent of at least 2 digits), t text, b blob (lowercase hex);
#         NULL prints as NULL.  Columns are tab-separated.
#   SQL: @STORE@ stands for the store's path; parameters are :p1, :p2, ...
#   PARAM: i:INTEGER, r:REAL, t:TEXT, v:FLOAT,... (a float32 blob), n: (NULL).
class Plan:
    def __init__(self):
        self.lines, self.expect = [], []

    def exec(self, sql, *params):
        self.lines.append("\t".join(["exec", "-", "-", sql, *params]))

    def query(self, name, fmt, sql, params, rows):
        self.lines.append("\t".join(["query", name, fmt, sql, *params]))
        self.expect.append((name, fmt, rows))

    def reopen(self):
        self.lines.append("reopen")


def vparam(v):
    return "v:" + ",".join(repr(float(x)) for x in v)


def qparam(v):
    return "n:" if v is None else ("i:%d" % v if isinstance(v, int) else
                                   "r:%r" % v if isinstance(v, float) else "t:" + v)


def f32hex(v):
    return struct.pack("<%df" % len(v), *v).hex()


def searches(p, m, tag):
    p.query(tag + "count", "i", "SELECT count(*) FROM mem", [], [(len(m.mems),)])
    p.query(tag + "rows", "ittif", "SELECT id, text, source, ts, importance FROM mem ORDER BY id", [],
            [(i, t, s, ts, imp) for i, (t, e, s, ts, imp) in sorted(m.mems.items())])
    p.query(tag + "blob", "ib", "SELECT id, embedding FROM mem WHERE id = :p1", ["i:3"],
            [(3, f32hex(m.mems[3][1]))])
    p.query(tag + "entities", "ittt", "SELECT id, name, type, aliases FROM mem_entities ORDER BY id", [],
            [(i, *e) for i, e in sorted(m.ents.items())])
    p.query(tag + "vec_search", "ifft", "SELECT id, distance, score, text FROM vec_search('mem', :p1, 3)",
            [vparam(Q1)], m.vec(Q1, 3))
    p.query(tag + "knn", "if", "SELECT id, distance FROM mem WHERE embedding MATCH :p1 AND k = 2",
            [vparam(Q2)], [r[:2] for r in m.vec(Q2, 2)])
    p.query(tag + "bm25", "ift", "SELECT id, score, text FROM bm25('mem', :p1, 5)", ["t:coffee cafe tomatoes"],
            m.bm25_top("coffee cafe tomatoes", 5))
    p.query(tag + "hybrid", "ifff",
            "SELECT id, score, vector_score, keyword_score FROM hybrid('mem', :p1, :p2, 4)",
            ["t:coffee garden", "t:" + json.dumps(Q3)], m.hybrid("coffee garden", Q3, 4))
    p.query(tag + "hybrid_text", "ifff",
            "SELECT id, score, vector_score, keyword_score FROM hybrid('mem', :p1, :p2, 3)",
            ["t:tea river", "n:"], m.hybrid("tea river", None, 3))
    p.query(tag + "kg_bfs", "ititti",
            "SELECT id, name, depth, path, relation, relation_id FROM kg_bfs('mem', :p1, 2)", ["t:Al"],
            m.bfs(1, 2))
    p.query(tag + "kg_bfs_both", "ititti",
            "SELECT id, name, depth, path, relation, relation_id FROM kg_bfs('mem', :p1, :p2, :p3)",
            ["t:tea", "i:1", 't:{"direction": "both"}'], m.bfs(4, 1, "both"))
    allowed = {mm for mm, e in m.mentions if e in m.reach(2, 1)}
    p.query(tag + "graph_hybrid", "if",
            "SELECT id, score FROM hybrid('mem', :p1, :p2, 3) WHERE id IN (SELECT memory_id FROM mem_mentions"
            " WHERE entity_id IN (SELECT id FROM kg_bfs('mem', :p3, 1))) ORDER BY score DESC, id",
            ["t:garden", vparam(Q1), "t:Bob"], [r[:2] for r in m.hybrid("garden", Q1, 3, allowed)])


def make_plan():
    p, m = Plan(), Model()
    p.exec("CREATE VIRTUAL TABLE mem USING h5mem(path='@STORE@', dim=%d)" % DIM)
    p.exec("BEGIN")
    for i, (t, e, s, ts, imp) in MEMS.items():
        p.exec("INSERT INTO mem(id, text, embedding, source, ts, importance) VALUES (:p1, :p2, :p3, :p4, :p5, :p6)",
               "i:%d" % i, "t:" + t, vparam(e), "t:" + s, "i:%d" % ts, qparam(imp))
    p.exec("COMMIT")
    for i, (n, t, a) in ENTS.items():
        p.exec("INSERT INTO mem_entities(id, name, type, aliases) VALUES (:p1, :p2, :p3, :p4)",
               "i:%d" % i, "t:" + n, "t:" + t, qparam(a))
    for i, (s, d, t) in RELS.items():
        p.exec("INSERT INTO mem_relations(id, src, dst, type, ts) VALUES (:p1, :p2, :p3, :p4, :p5)",
               "i:%d" % i, "i:%d" % s, "i:%d" % d, "t:" + t, "i:%d" % T0)
    for mm, e in MENTIONS:
        p.exec("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (:p1, :p2)", "i:%d" % mm, "i:%d" % e)
    searches(p, m, "a.")
    p.query("a.checkpoint", "i", "SELECT h5mem_checkpoint('mem')", [], [(len(m.mems),)])
    # a new connection: the table made again over the same file, dim from the store
    p.reopen()
    p.exec("CREATE VIRTUAL TABLE mem USING h5mem(path='@STORE@')")
    searches(p, m, "b.")
    p.exec("DELETE FROM mem WHERE id = :p1", "i:2")
    del m.mems[2]
    i, t, e, s, ts, imp = NEW_MEM
    p.exec("INSERT INTO mem(id, text, embedding, source, ts) VALUES (:p1, :p2, :p3, :p4, :p5)",
           "i:%d" % i, "t:" + t, vparam(e), "t:" + s, "i:%d" % ts)
    m.mems[i] = (t, e, s, ts, imp)
    p.exec("UPDATE mem SET importance = :p1 WHERE id = :p2", "r:0.5", "i:3")
    m.mems[3] = m.mems[3][:4] + (0.5,)
    i, s, d, t = NEW_REL
    p.exec("INSERT INTO mem_relations(id, src, dst, type) VALUES (:p1, :p2, :p3, :p4)",
           "i:%d" % i, "i:%d" % s, "i:%d" % d, "t:" + t)
    m.rels[i] = (s, d, t)
    p.exec("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (:p1, :p2)", "i:7", "i:3")
    m.mentions.append((7, 3))
    searches(p, m, "c.")
    p.exec("INSERT INTO mem(mem) VALUES('checkpoint')")
    p.reopen()
    p.exec("CREATE VIRTUAL TABLE mem USING h5mem(path='@STORE@', dim=%d)" % DIM)
    searches(p, m, "d.")
    # the store each binding leaves, read by another process (Python's)
    v = Plan()
    v.exec("CREATE VIRTUAL TABLE mem USING h5mem(path='@STORE@')")
    searches(v, m, "v.")
    return p, v


# ------------------------------------------------------------- checking Python's answers
def canon(c, v):  # what the scripts print, for a value computed here
    if v is None:
        return "NULL"
    return {"i": str, "f": lambda x: "%.5e" % (x + 0.0), "t": str, "b": str}[c](v)


def sections(out):
    secs, cur = {}, None
    for line in out.split("\n")[:-1]:
        if line.startswith("== "):
            cur = secs[line[3:]] = []
        else:
            cur.append(line.split("\t"))
    return secs


def check_expected(plan, out):
    errs, secs = [], sections(out)
    for name, fmt, rows in plan.expect:
        got = secs.get(name)
        if got is None:
            errs.append(f"{name}: missing")
            continue
        if len(got) != len(rows):
            errs.append(f"{name}: {len(got)} rows, expected {len(rows)}: {got} vs {rows}")
            continue
        for g, e in zip(got, rows):
            ok = len(g) == len(fmt) == len(e)
            for c, gv, ev in zip(fmt, g, e):
                if c == "f" and ev is not None and gv != "NULL":
                    ok = ok and abs(float(gv) - ev) <= 2e-6 + 1e-5 * abs(ev)
                else:
                    ok = ok and gv == canon(c, ev)
            if not ok:
                errs.append(f"{name}: got {g}, expected {[canon(c, v) for c, v in zip(fmt, e)]}")
    if len(secs) != len(plan.expect):
        errs.append(f"{len(secs)} sections, expected {len(plan.expect)}")
    return errs


# ------------------------------------------------------------- the bindings
class Skip(Exception):
    pass


def need(*progs):
    for p in progs:
        if not (shutil.which(p) or os.path.exists(p)):
            raise Skip(f"{p} not found")


def need_pkg(*pkgs):
    for pkg in pkgs:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True,
                           env=build_env())
        if "ok installed" not in r.stdout:
            raise Skip(f"Debian package {pkg} is not installed")


def pkg_versions(*pkgs):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Package}=${Version}\n", *pkgs], capture_output=True, text=True,
                       env=build_env())
    return r.stdout


def build_env():  # compilers run without the sanitizer runtime
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def run_build(cmd, cwd, env, what):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(f"{what} failed ({r.returncode}):\n{r.stdout}{r.stderr}")


def cached(name, key_parts, build):
    """The built program's folder, made by build(dir) once per key (its sources,
    the toolchain's and the packages' versions) in /tmp, renamed into place whole."""
    key = hashlib.sha256("\0".join(key_parts).encode()).hexdigest()[:16]
    out = os.path.join(CACHE, f"{name}-{key}")
    if not os.path.isdir(out):
        os.makedirs(CACHE, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f"{name}-", dir=CACHE)
        try:
            build(tmp)
            try:
                os.rename(tmp, out)
            except OSError:  # another run made it meanwhile
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def src(name):
    with open(os.path.join(HERE, name), encoding="utf-8") as f:
        return f.read()


def tool_version(*cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, env=build_env())
    return r.stdout + r.stderr


def script(prog, pkg, name, *opts):  # an interpreted binding: its program, its Debian package
    def prep():
        need(prog)
        need_pkg(pkg)
        return [prog, *opts, os.path.join(HERE, name)]
    return prep


def prep_node():
    need("node")
    mod = os.path.join(SRCDIR, "test", "interop", "node_modules", "better-sqlite3")
    if not os.path.isdir(mod):
        raise Skip(f"better-sqlite3 is not installed in {os.path.dirname(mod)} (npm ci there)")
    return ["node", os.path.join(HERE, "bind_node.js")]


def prep_java():
    need("java", "javac")
    need_pkg("libxerial-sqlite-jdbc-java")
    jar = "/usr/share/java/sqlite-jdbc.jar"
    code = src("BindJava.java")

    def build(d):
        with open(os.path.join(d, "BindJava.java"), "w", encoding="utf-8") as f:
            f.write(code)
        run_build(["javac", "-encoding", "UTF-8", "-cp", jar, "-d", d, "BindJava.java"], d, build_env(), "javac")
    d = cached("java", [code, tool_version("javac", "-version"), pkg_versions("libxerial-sqlite-jdbc-java")], build)
    return ["java", "-cp", d + os.pathsep + jar, "BindJava"]


GO_SQLITE3 = "/usr/share/gocode/src/github.com/mattn/go-sqlite3"


def prep_go():
    need("go")
    need_pkg("golang-github-mattn-go-sqlite3-dev")
    code = src("bind_go.go")

    def build(d):
        with open(os.path.join(d, "main.go"), "w", encoding="utf-8") as f:
            f.write(code)
        with open(os.path.join(d, "go.mod"), "w") as f:
            f.write("module h5membind\n\ngo 1.19\n\nrequire github.com/mattn/go-sqlite3 v1.14.16\n\n"
                    f"replace github.com/mattn/go-sqlite3 => {GO_SQLITE3}\n")
        env = dict(build_env(), GOFLAGS="-mod=mod", GOPROXY="off", GOTOOLCHAIN="local",
                   GOCACHE=os.path.join(d, "gocache"), GOPATH=os.path.join(d, "gopath"), CGO_ENABLED="1")
        run_build(["go", "build", "-tags", "libsqlite3", "-o", "bind_go", "."], d, env, "go build")
        shutil.rmtree(os.path.join(d, "gocache"), ignore_errors=True)
        shutil.rmtree(os.path.join(d, "gopath"), ignore_errors=True)
    d = cached("go", [code, tool_version("go", "version"),
                      pkg_versions("golang-github-mattn-go-sqlite3-dev", "libsqlite3-dev")], build)
    return [os.path.join(d, "bind_go")]


CARGO_TOML = """[package]
name = "bind_rust"
version = "0.1.0"
edition = "2021"

[dependencies]
rusqlite = { version = "0.28", features = ["load_extension"] }
"""
# Debian's crates, offline: the registry's crates-io replaced by their directory
CARGO_CONFIG = """[source.crates-io]
replace-with = "debian"

[source.debian]
directory = "/usr/share/cargo/registry"

[net]
offline = true
"""


def prep_rust():
    if not CARGO:
        raise Skip("cargo not found")
    need_pkg("librust-rusqlite-dev")
    code = src("bind_rust.rs")

    def build(d):
        os.makedirs(os.path.join(d, "src"))
        os.makedirs(os.path.join(d, ".cargo"))
        for path, text in (("Cargo.toml", CARGO_TOML), ("src/main.rs", code), (".cargo/config.toml", CARGO_CONFIG)):
            with open(os.path.join(d, path), "w", encoding="utf-8") as f:
                f.write(text)
        env = dict(build_env(), CARGO_TARGET_DIR=os.path.join(d, "target"))
        run_build([CARGO, "build", "--release", "--offline", "--quiet"], d, env, "cargo build")
        shutil.copy(os.path.join(d, "target", "release", "bind_rust"), d)
        shutil.rmtree(os.path.join(d, "target"), ignore_errors=True)
    pkgs = pkg_versions("librust-*", "libsqlite3-dev")
    d = cached("rust", [code, CARGO_TOML, CARGO_CONFIG, tool_version(CARGO, "--version"),
                        tool_version(os.path.join(os.path.dirname(CARGO), "rustc"), "--version"), pkgs], build)
    return [os.path.join(d, "bind_rust")]


BINDINGS = {
    "python": lambda: [sys.executable, os.path.join(HERE, "bind_python.py")],
    "node": prep_node,
    "perl": script("perl", "libdbd-sqlite3-perl", "bind_perl.pl"),
    "ruby": script("ruby", "ruby-sqlite3", "bind_ruby.rb"),
    # SQLite3::loadExtension loads only from sqlite3.extension_dir, a system ini setting
    "php": script("php", "php-sqlite3", "bind_php.php", "-d", "sqlite3.extension_dir=" + os.path.dirname(EXT)),
    "tcl": script("tclsh", "libsqlite3-tcl", "bind_tcl.tcl"),
    "java": prep_java,
    "go": prep_go,
    "rust": prep_rust,
}


# hosts that cannot run under the preloaded ASan runtime (tried; a skip in sanitizer builds only)
SAN_SKIP = {"php": "PHP dlopens its modules (sqlite3.so among them) with RTLD_DEEPBIND, which the ASan runtime refuses"}


def host_env():  # LC_ALL=C: the scripts must not depend on a UTF-8 locale
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    env.update(LC_ALL="C", H5MEM_SRCDIR=SRCDIR)
    if PRELOAD:
        env.update(LD_PRELOAD=PRELOAD, ASAN_OPTIONS="detect_leaks=0")
    return env


def run(name, cmd, plan, store):
    r = subprocess.run(cmd + [plan, store, EXT], env=host_env(), capture_output=True, timeout=300)
    out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    if r.returncode:
        raise RuntimeError(f"exit {r.returncode}\n{err[-3000:]}")
    if err.strip():
        print(f"  {name} stderr: {err[-2000:]}")
    return r.stdout, out


def expect(plan, out, what):
    errs = check_expected(plan, out)
    if errs:
        raise RuntimeError(f"{what}:\n  " + "\n  ".join(errs[:20]))


def run_binding(name, plans, work, ref):
    t = time.time()
    cmd = BINDINGS[name]()
    tb = time.time() - t
    store = os.path.join(work, name, "agent.h5")
    os.makedirs(os.path.dirname(store))
    raw, out = run(name, cmd, plans[0][1], store)
    if ref is None:
        expect(plans[0][0], out, "wrong answers")
    elif raw != ref:
        ref = ref.decode("utf-8", "replace").split("\n")
        diff = [f"  python: {a!r}\n  {name}: {b!r}" for a, b in zip(ref, out.split("\n")) if a != b]
        raise RuntimeError("output differs from Python's:\n" + "\n".join(diff[:10])
                           + ("" if diff else f"\n  {len(out.split(chr(10)))} vs {len(ref)} lines"))
    tr = time.time() - t - tb
    expect(plans[1][0], run(name, BINDINGS["python"](), plans[1][1], store)[1], "the store read back by Python")
    print(f"ok   {name} (build {tb:.1f}s, run {tr:.1f}s, {out.count(chr(10))} lines; its store read back)")
    return raw


def main(argv):
    plan, verify = make_plan()
    if "--plan" in argv:
        sys.stdout.write("\n".join(plan.lines) + "\n")
        return 0
    names = [a for a in argv if not a.startswith("--")] or list(BINDINGS)
    unknown = set(names) - set(BINDINGS)
    if unknown:
        sys.exit(f"unknown bindings {sorted(unknown)}; known: {' '.join(BINDINGS)}")
    work = tempfile.mkdtemp(prefix="h5mem-bindings-")
    plans = []
    for p, file in ((plan, "plan.tsv"), (verify, "verify.tsv")):
        plans.append((p, os.path.join(work, file)))
        with open(plans[-1][1], "w", encoding="utf-8") as f:
            f.write("\n".join(p.lines) + "\n")
    ref, passed, failed, skipped = None, [], [], []
    for name in ["python"] + [n for n in names if n != "python"]:
        try:
            if PRELOAD and name in SAN_SKIP:
                raise Skip(SAN_SKIP[name] + " (sanitizer build)")
            out = run_binding(name, plans, work, ref)
            ref = ref or out
            passed.append(name)
        except Skip as e:
            hard = REQUIRE and not (PRELOAD and name in SAN_SKIP)
            print(f"{'FAIL' if hard else 'skip'} {name}: {e}")
            (failed if hard else skipped).append(name)
        except Exception as e:  # noqa: BLE001 - each failure reported, the others still run
            print(f"FAIL {name}: {e}")
            failed.append(name)
            if name == "python":
                break
    if failed or "--keep" in argv:
        print("stores and plan kept in", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    return 1 if failed else 77 if not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
