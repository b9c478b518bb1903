"""h5mem from Python's sqlite3 module: runs a plan of test_bindings.py.
    bind_python.py PLAN STORE EXT"""
import sqlite3
import struct
import sys


def param(p):
    kind, _, val = p.partition(":")
    if kind == "v":
        xs = [float(x) for x in val.split(",")]
        return struct.pack("<%df" % len(xs), *xs)
    return {"i": int, "r": float, "t": str, "n": lambda _: None}[kind](val)


def fmt(c, v):
    if v is None:
        return "NULL"
    return {"i": str, "f": lambda x: "%.5e" % (x + 0.0), "t": str, "b": bytes.hex}[c](v)


def connect(ext):
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(ext)
    db.enable_load_extension(False)
    return db


def main(plan, store, ext):
    out = open(sys.stdout.fileno(), "w", encoding="utf-8", newline="\n", closefd=False)
    db = connect(ext)
    with open(plan, encoding="utf-8") as f:
        for line in f:
            kind, name, cols, sql, *params = line.rstrip("\n").split("\t") + ["-"] * 3
            if kind == "reopen":
                db.close()
                db = connect(ext)
                continue
            args = {"p%d" % (i + 1): param(p) for i, p in enumerate(params) if p != "-"}
            rows = db.execute(sql.replace("@STORE@", store), args).fetchall()
            if kind == "query":
                out.write("== %s\n" % name)
                for r in rows:
                    out.write("\t".join(fmt(c, v) for c, v in zip(cols, r)) + "\n")
    db.close()
    out.flush()


if __name__ == "__main__":
    main(*sys.argv[1:4])
