"""sqlite-vec's own Python tests (tests/test-loadable.py at v0.1.9) against
h5mem, with only the load line changed (issue 20).

Where the sources come from: SQLITE_VEC_SRC (a checkout or unpacked tarball
of asg017/sqlite-vec at tag v0.1.9), else test/interop/sqlite-vec/
(git-ignored; scripts/fetch-sqlite-vec-tests puts it there).  Nothing of
sqlite-vec is in this repository.  Absent, or pytest absent: SKIP (exit 77,
automake's skip) saying how to get it.

What runs: the file is copied to a temporary folder with its one line
`EXT_PATH = "./dist/vec0"` pointing at h5mem instead, and pytest runs the
tests in scope.  A test is out of scope when it is about what h5mem does
not claim: sqlite-vec's vec0 table (h5mem's table is h5mem; its KNN form is
checked against vec0 by test_vs_sqlitevec.py and test_search.py), the extra
entry points (vec_static_blobs, vec_numpy), the exact lists of names the
extension registers, or the test file itself (OUT lines, with the reason).

Each test in scope:
- needs the sqlite-vec functions its source calls; one h5mem lacks makes it
  LACKS (run and reported, not a failure: a feature still missing);
- else it must PASS; or, failing, pass again in a second copy where only
  the error checks are loosened (pytest.raises of an SQLite error accepts
  any SQLite error, whatever its text and code): then the difference is
  the error's text or code only, and docs/SQL.md's "Differences from
  sqlite-vec" must name the test (ERRTEXT); or fail on input h5mem refuses
  on purpose (STRICT: JSON that is not JSON, listed there too); anything
  else is a FAIL.
Exit 1 on a FAIL or an ERRTEXT the documentation does not list.

The other test files of v0.1.9 (test-metadata.py, test-partition-keys.py,
test-auxiliary.py, test-knn-distance-constraints.py, test-insert-delete.py,
test-general.py: the ones comparing with syrupy snapshots, which Debian
does not package) test vec0 tables in every test: out of scope, each
listed with its count (OUT lines); one of their tests without a vec0 table
would be reported as not run (FAIL), so that it is looked at.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

TAG = "v0.1.9"
SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("H5MEM_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
EXT = os.environ.get("H5MEM_EXT") or os.path.join(os.getcwd(), "h5mem")
DEFAULT = os.path.join(SRCDIR, "test", "interop", "sqlite-vec")
LOAD_LINE = 'EXT_PATH = "./dist/vec0"'

# Out of scope, by test: why.  (Any other test whose source creates a vec0
# table is out of scope too: VEC0.)
OUT = {
    "test_vec_static_blob_entries": "sqlite-vec's vec_static_blobs entry point (not claimed)",
    "test_vec_npy_each": "sqlite-vec's vec_numpy entry point (not claimed)",
    "test_vec_npy_each_errors": "sqlite-vec's vec_numpy entry point (not claimed)",
    "test_vec_npy_each_errors_files": "sqlite-vec's vec_numpy entry point (not claimed)",
    "test_funcs": "the exact list of functions the extension registers (h5mem registers others too; "
                  "the ones of sqlite-vec it lacks are listed above)",
    "test_modules": "the exact list of modules the extension registers (vec0 is not ours)",
    "test_coverage": "checks the test file itself (a test for every name in its lists), not the extension",
}
VEC0 = "sqlite-vec's vec0 table (h5mem's table is h5mem, with its own options)"

# Tests that give sqlite-vec input h5mem refuses on purpose (docs/SQL.md,
# "Differences from sqlite-vec": JSON that is not JSON): test -> the error
# its failure must be.  STRICT when it fails so and the documentation names
# it; any other failure of it is a FAIL.
STRICT = {
    "test_vec_add": "malformed JSON vector",  # vec_add('[.1]', '[.2]'): .1 is not a JSON number
    "test_vec_sub": "malformed JSON vector",  # vec_sub('[.1]', '[.2]')
}


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def find_source():
    src = os.environ.get("SQLITE_VEC_SRC") or DEFAULT
    how = ("get it with scripts/fetch-sqlite-vec-tests (clones asg017/sqlite-vec at %s into %s; "
           "SQLITE_VEC_GIT=<a local clone> works without network), or point SQLITE_VEC_SRC at a "
           "checkout of that tag" % (TAG, DEFAULT))
    path = os.path.join(src, "tests", "test-loadable.py")
    if not os.path.isfile(path):
        skip("sqlite-vec's tests are not in %s: %s" % (src, how))
    version = open(os.path.join(src, "VERSION")).read().strip() if os.path.isfile(
        os.path.join(src, "VERSION")) else "?"
    if version != TAG[1:]:
        skip("%s is sqlite-vec %s, not %s: %s" % (src, version, TAG, how))
    return path


def test_sources(text):
    """{test name: its source}, top-level test functions in file order."""
    out = {}
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"^def (test_\w+)\(", text, re.M)]
    for i, (pos, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        out[name] = text[pos:end]
    return out


def names_in(text, var):
    m = re.search(r"^%s = \[(.*?)^\]" % var, text, re.M | re.S)
    return re.findall(r'^\s*"(\w+)"', m.group(1), re.M) if m else []


def h5mem_names():
    import sqlite3
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(EXT)
    funcs = {r[0] for r in db.execute("SELECT name FROM pragma_function_list")}
    mods = {r[0] for r in db.execute("SELECT name FROM pragma_module_list")}
    db.close()
    return funcs, mods


def run_pytest(folder, fname, tests):
    """{test: 'passed' | 'failed' | 'skipped' | 'error'} and {test: message}."""
    xml = os.path.join(folder, "report-%s.xml" % fname)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", folder,
           "-c", os.devnull, "--junitxml", xml] + ["%s::%s" % (fname, t) for t in tests]
    subprocess.run(cmd, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    res, msg = {}, {}
    if not os.path.exists(xml):
        return res, msg
    for case in ET.parse(xml).getroot().iter("testcase"):
        name = case.get("name")
        res[name] = "passed"
        for kind in ("failure", "error", "skipped"):
            el = case.find(kind)
            if el is not None:
                res[name] = {"failure": "failed", "error": "error", "skipped": "skipped"}[kind]
                text = (el.get("message") or "") + "\n" + (el.text or "")
                msg[name] = text.strip().splitlines()[0][:300] if text.strip() else kind
    return res, msg


LOOSE = '''
# --- added in the loosened copy only: an expected SQLite error matches any
# SQLite error, whatever its text and code (the failing test passing here
# differs from sqlite-vec in the error only)
_h5mem_raises = pytest.raises


def _h5mem_loose_raises(expected, *args, match=None, **kw):
    if isinstance(expected, type) and issubclass(expected, sqlite3.Error):
        return _h5mem_raises(sqlite3.Error, *args, **kw)
    return _h5mem_raises(expected, *args, match=match, **kw)


pytest.raises = _h5mem_loose_raises
'''


def documented(name):
    text = open(os.path.join(SRCDIR, "docs", "SQL.md"), encoding="utf-8").read()
    m = re.search(r"^## Differences from sqlite-vec\n(.*?)(?=^## )", text, re.M | re.S)
    return bool(m) and ("`%s`" % name) in m.group(1)


def main():
    path = find_source()
    try:
        import pytest  # noqa: F401
    except ImportError:
        skip("pytest is not installed (Debian: apt-get install python3-pytest)")
    text = open(path, encoding="utf-8").read()
    if text.count(LOAD_LINE) != 1:
        print("FAIL: %s does not have the line %s once: not sqlite-vec %s's file" % (path, LOAD_LINE, TAG))
        sys.exit(1)
    exact = text.replace(LOAD_LINE, "EXT_PATH = %r" % EXT)
    tests = test_sources(text)
    theirs = names_in(text, "FUNCTIONS") + names_in(text, "MODULES")
    funcs, mods = h5mem_names()
    ours = funcs | mods
    lacking = [n for n in theirs if n not in ours and n != "vec0"]
    print("sqlite-vec %s's tests/test-loadable.py against %s" % (TAG, EXT))
    print("sqlite-vec's functions and modules h5mem lacks: %s" % (", ".join(lacking) or "none"))

    scope, out, needs = [], {}, {}
    for name, src in tests.items():
        if name in OUT:
            out[name] = OUT[name]
        elif re.search(r"using\s+vec0", src, re.I):
            out[name] = VEC0
        else:
            scope.append(name)
            used = set(re.findall(r"\b(vec_\w+)\s*\(", src)) | set(re.findall(r"using\s+(vec_\w+)", src))
            needs[name] = sorted(n for n in used if n in theirs and n not in ours)

    others_bad = 0
    for other in sorted(os.listdir(os.path.dirname(path))):
        if not re.match(r"test-.*\.py$", other) or other == os.path.basename(path):
            continue
        srcs = test_sources(open(os.path.join(os.path.dirname(path), other), encoding="utf-8").read())
        plain = [n for n, src in srcs.items() if not re.search(r"using\s+vec0", src, re.I)]
        if plain:
            print("FAIL    %s: %s do not make a vec0 table: not run by this script" % (other, ", ".join(plain)))
            others_bad += 1
        else:
            print("OUT     %s: its %d tests: %s" % (other, len(srcs), VEC0))

    tmp = tempfile.mkdtemp(prefix="h5svec_")
    try:
        with open(os.path.join(tmp, "test_loadable.py"), "w", encoding="utf-8") as f:
            f.write(exact)
        res, msg = run_pytest(tmp, "test_loadable.py", scope)
        redo = [t for t in scope if res.get(t) in ("failed", "error")]
        loose_res = {}
        if redo:
            with open(os.path.join(tmp, "test_loose.py"), "w", encoding="utf-8") as f:
                f.write(exact.replace("\ndb = connect(EXT_PATH)\n", LOOSE + "\ndb = connect(EXT_PATH)\n", 1))
            loose_res, _ = run_pytest(tmp, "test_loose.py", redo)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    bad = others_bad
    counts = {}
    for name in tests:
        if name in out:
            line = "OUT     %s: %s" % (name, out[name])
            kind = "OUT"
        elif res.get(name) is None:
            line, kind = "FAIL    %s: pytest reported nothing (did the file load?)" % name, "FAIL"
            bad += 1
        elif res[name] == "passed":
            line, kind = "PASS    %s" % name, "PASS"
        elif res[name] == "skipped":
            line, kind = "SKIPPED %s (skipped by the file itself: %s)" % (name, msg.get(name, "")), "SKIPPED"
        elif needs[name]:
            line = "LACKS   %s: needs %s; fails: %s" % (name, ", ".join(needs[name]), msg.get(name, ""))
            kind = "LACKS"
        elif name in STRICT and STRICT[name] in msg.get(name, "") and documented(name):
            line = "STRICT  %s: refuses input sqlite-vec accepts (docs/SQL.md lists it): %s" % (name, msg.get(name, ""))
            kind = "STRICT"
        elif loose_res.get(name) == "passed":
            kind = "ERRTEXT"
            if documented(name):
                line = "ERRTEXT %s: differs in the error's text or code only (docs/SQL.md lists it): %s" % (
                    name, msg.get(name, ""))
            else:
                line = ("FAIL    %s: differs in the error's text or code only, but docs/SQL.md's "
                        "\"Differences from sqlite-vec\" does not name `%s`: %s" % (name, name, msg.get(name, "")))
                bad += 1
        else:
            line, kind = "FAIL    %s: %s" % (name, msg.get(name, "")), "FAIL"
            bad += 1
        counts[kind] = counts.get(kind, 0) + 1
        print(line)
    print(", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
