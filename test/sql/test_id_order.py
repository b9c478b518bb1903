"""Finding records by id, whatever the order of the ids in the file (issue 26).

A store whose checkpointed rows have increasing ids finds them by binary
search and builds no id map when it opens; one whose ids are out of order
(a lower id inserted, an UPDATE that re-puts a record, a migration) maps
them.  Random operations against a dict of what each id holds, through
both states and the moves between them:
- INSERTs of the next id and of lower free ids, DELETEs, UPDATEs, INSERT
  OR REPLACE, lookups of present and absent ids (`id = ?`, and `IN`);
- transactions rolled back (a deleted checkpointed row comes back, an
  inserted one goes) and savepoints;
- checkpoints (the rows appended continue the order or break it), reopens,
  `optimize`;
- a second connection reading what the writer committed.
Each step's every id is looked up, and the whole table compared.
"""
import os
import random
import tempfile

from sqltest import check, connect as conn, finish


def open_store(path):
    db = conn()
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', dim=2)" % path)
    return db


def compare(db, model, probe, what):
    rows = dict(db.execute("SELECT id, text FROM m").fetchall())
    check(rows == model, "%s: the table (%d rows) is the model (%d)" % (what, len(rows), len(model)))
    bad = [i for i in probe if db.execute("SELECT text FROM m WHERE id = ?", (i,)).fetchall()
           != ([(model[i],)] if i in model else [])]
    check(not bad, "%s: lookups by id wrong for %s" % (what, bad[:10]))
    some = sorted(probe)[:40]
    got = sorted(db.execute("SELECT id FROM m WHERE id IN (%s)" % ",".join("?" * len(some)), some).fetchall())
    check(got == [(i,) for i in some if i in model], "%s: id IN (...)" % what)


def main():
    rng = random.Random(2026)
    tmp = tempfile.mkdtemp(prefix="h5mem_idorder_")
    path = os.path.join(tmp, "m.h5")
    db = open_store(path)
    reader = open_store(path)
    model = {}
    nxt = 1
    for step in range(80):
        # the first 30 steps keep the order (appends and deletes), the rest break it
        ordered = step < 30
        op = rng.random()
        db.execute("BEGIN")
        saved = dict(model)
        for _ in range(rng.randint(1, 30)):
            r = rng.random()
            if ordered and r >= 0.55:
                r = 0.6  # (a delete)
            if r < 0.45 or not model:  # the next id: the order continues
                model[nxt] = "t%d" % nxt
                db.execute("INSERT INTO m(id, text) VALUES (?, ?)", (nxt, model[nxt]))
                nxt += rng.randint(1, 3)
            elif r < 0.55:  # a lower free id: the order breaks at the next checkpoint
                free = [i for i in range(1, nxt) if i not in model]
                if free:
                    i = rng.choice(free)
                    model[i] = "low%d" % i
                    db.execute("INSERT INTO m(id, text) VALUES (?, ?)", (i, model[i]))
            elif r < 0.75:
                i = rng.choice(sorted(model))
                del model[i]
                db.execute("DELETE FROM m WHERE id = ?", (i,))
            elif r < 0.9:
                i = rng.choice(sorted(model))
                model[i] = "u%d.%d" % (i, step)
                db.execute("UPDATE m SET text = ? WHERE id = ?", (model[i], i))
            else:
                i = rng.choice(sorted(model))
                model[i] = "r%d.%d" % (i, step)
                db.execute("INSERT OR REPLACE INTO m(id, text) VALUES (?, ?)", (i, model[i]))
        if op < 0.15:
            db.execute("ROLLBACK")
            model = saved
        else:
            db.execute("COMMIT")
        probe = set(model) | {rng.randint(0, nxt + 5) for _ in range(20)}
        compare(db, model, probe, "step %d" % step)
        if step % 7 == 3:
            db.execute("INSERT INTO m(m) VALUES('checkpoint')")
            compare(db, model, probe, "step %d, after a checkpoint" % step)
        if step % 11 == 5:
            db.close()
            db = open_store(path)
            compare(db, model, probe, "step %d, reopened" % step)
        if step % 13 == 9:
            db.execute("INSERT INTO m(m) VALUES('optimize')")
            compare(db, model, probe, "step %d, after optimize" % step)
        if step % 5 == 4:
            compare(reader, model, probe, "step %d, another connection" % step)
    # a rollback brings back a checkpointed row (no map entry when the rows are in order)
    db.close()
    path = os.path.join(tmp, "ordered.h5")
    db = open_store(path)
    model = {i: "o%d" % i for i in range(1, 200, 2)}
    db.execute("BEGIN")
    db.executemany("INSERT INTO m(id, text) VALUES (?, ?)", sorted(model.items()))
    db.execute("COMMIT")
    db.close()
    db = open_store(path)
    compare(db, model, set(range(0, 202)), "an ordered store reopened")
    i = min(model)
    db.execute("BEGIN")
    db.execute("DELETE FROM m WHERE id = ?", (i,))
    check(db.execute("SELECT count(*) FROM m WHERE id = ?", (i,)).fetchone()[0] == 0, "deleted in the transaction")
    db.execute("ROLLBACK")
    compare(db, model, set(model), "a delete of a checkpointed row rolled back")
    db.execute("SAVEPOINT a")
    db.execute("DELETE FROM m WHERE id = ?", (i,))
    db.execute("INSERT INTO m(id, text) VALUES (?, 'again')", (i,))
    db.execute("ROLLBACK TO a")
    db.execute("RELEASE a")
    compare(db, model, set(model), "a savepoint's delete and re-insert taken back")
    db.close()
    reader.close()
    finish()


main()
