"""bm25() against FTS5, the oracle, on the same records:

- 500 queries of 1-4 terms on a synthetic multilingual corpus (Zipf words,
  case and diacritics, punctuation, numbers, empty and NULL texts): our
  scores equal -bm25() of FTS5 (unicode61) for the same terms joined with
  OR to 1e-9 relative, and the top 10 ids are the same (ties by id);
- in every state of the store: records only in memory (the log), after a
  checkpoint (the saved image), with rows past the image (a tail tokenized
  in memory), after deletes and updates, after a rolled-back transaction,
  after reopening, after optimize;
- tokenize='porter unicode61' against FTS5's porter tokenizer, and
  remove_diacritics 0 and 2;
- filters (source, session, tier, ts, id IN) pushed down: the top k among
  the matching records, the statistics over all of them (as FTS5);
- the image in the file (h5py reads /index/text_image), its damage noticed
  (a note; results still right), errors for bad arguments.

Run by make check with Debian's /usr/bin/python3 (h5py).
"""
import json
import os
import random
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

WORDS = ("memory agent store vector search query token index graph session user assistant "
         "note plan task file time data model embed recall score rank text write read open "
         "close fast slow week day night coffee tea garden river mountain city train").split()
EXTRA = ["café", "Café", "naïve", "Résumé", "résumé", "ÉCOLE", "école", "Straße", "Ελλάδα",
         "москва", "東京", "running", "runs", "ran", "runner", "connection", "connected",
         "connecting", "généralement", "ﬁle", "x86_64", "3.14", "2026-11-29"]
VOCAB = WORDS + EXTRA + ["w%d" % i for i in range(400)]
SOURCES = ["user", "assistant", "tool", "web"]


def zipf_word(rng):
    i = min(int(rng.paretovariate(0.9)) - 1, len(VOCAB) - 1)
    return VOCAB[i]


def make_text(rng):
    r = rng.random()
    if r < 0.01:
        return None
    if r < 0.02:
        return ""
    n = rng.randint(1, 40)
    parts = []
    for _ in range(n):
        w = zipf_word(rng)
        if rng.random() < 0.1:
            w = w.upper() if rng.random() < 0.5 else w.capitalize()
        parts.append(w)
        if rng.random() < 0.15:
            parts.append(rng.choice([",", ".", "!", " -", "'s", ":", "(x)", "..."]))
    return " ".join(parts)


def make_record(rng, i):
    return (i, make_text(rng), rng.choice(SOURCES), "s%d" % rng.randint(0, 9),
            rng.choice(["hot", "warm", "cold"]), 1_700_000_000 + rng.randint(0, 10**6))


class Mirror:
    """The same records in an h5mem store and in an FTS5 table (+ a plain
    table of their metadata for the filters)."""

    def __init__(self, path, tokenize=None, fts_tokenize="unicode61"):
        self.path = path
        self.tok = tokenize
        self.db = connect()
        opt = ", tokenize=%s" % q(tokenize) if tokenize else ""
        self.db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4%s)" % (q(path), opt))
        self.fts_tok = fts_tokenize
        self.make_fts()
        self.recs = {}

    def make_fts(self):
        self.db.execute("DROP TABLE IF EXISTS f")
        self.db.execute("DROP TABLE IF EXISTS m")
        self.db.execute("CREATE VIRTUAL TABLE f USING fts5(t, tokenize=%s)" % q(self.fts_tok))
        self.db.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, source, session, tier, ts)")

    def put(self, recs):
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO mem(id, text, embedding, source, session, tier, ts) "
                            "VALUES (?, ?, '[1,0,0,0]', ?, ?, ?, ?)", recs)
        self.db.execute("COMMIT")
        self.fts_put(recs)

    def fts_put(self, recs):
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)",
                            [(r[0], r[1]) for r in recs if r[1] is not None])
        self.db.executemany("INSERT INTO m VALUES (?, ?, ?, ?, ?)", [(r[0],) + r[2:] for r in recs])
        self.db.execute("COMMIT")
        for r in recs:
            self.recs[r[0]] = r

    def delete(self, ids):
        self.db.execute("BEGIN")
        self.db.executemany("DELETE FROM mem WHERE id = ?", [(i,) for i in ids])
        self.db.execute("COMMIT")
        self.db.executemany("DELETE FROM f WHERE rowid = ?", [(i,) for i in ids])
        self.db.executemany("DELETE FROM m WHERE id = ?", [(i,) for i in ids])
        for i in ids:
            del self.recs[i]

    def update(self, rng, ids):
        new = [make_record(rng, i) for i in ids]
        self.db.execute("BEGIN")
        for r in new:
            self.db.execute("UPDATE mem SET text = ? WHERE id = ?", (r[1], r[0]))
        self.db.execute("COMMIT")
        for r in new:
            self.db.execute("DELETE FROM f WHERE rowid = ?", (r[0],))
            if r[1] is not None:
                self.db.execute("INSERT INTO f(rowid, t) VALUES (?, ?)", (r[0], r[1]))
            self.recs[r[0]] = (r[0], r[1]) + self.recs[r[0]][2:]

    def reopen(self):
        self.db.close()
        self.db = connect()
        self.db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(self.path))
        self.make_fts()
        recs = list(self.recs.values())
        self.recs = {}
        self.fts_put(recs)


def terms_of(db, text, tok_opts):
    return json.loads(db.execute("SELECT h5mem_tokenize(?, ?)", (text, tok_opts)).fetchone()[0])


def compare(m, rng, nq, tag, tok_opts='{}', where="", fwhere="", args=()):
    """nq random queries: ours equal FTS5's; returns the mismatch count."""
    bad = 0
    nonempty = 0
    for _ in range(nq):
        words = [zipf_word(rng) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.2:
            words = [w.upper() for w in words]
        query = " ".join(words)
        terms = list(dict.fromkeys(terms_of(m.db, query, tok_opts)))
        ours = m.db.execute("SELECT id, score FROM bm25('mem', ?, 10)" + where,
                            (query,) + args).fetchall()
        if terms:
            fq = " OR ".join('"%s"' % t.replace('"', '""') for t in terms)
            sql = ("SELECT f.rowid, -bm25(f) FROM f JOIN m ON m.id = f.rowid WHERE f MATCH ?" +
                   fwhere + " ORDER BY bm25(f), f.rowid LIMIT 10")
            theirs = m.db.execute(sql, (fq,) + args).fetchall()
        else:
            theirs = []
        nonempty += bool(theirs)
        same = [r[0] for r in ours] == [r[0] for r in theirs] and all(
            abs(a[1] - b[1]) <= 1e-9 * abs(b[1]) for a, b in zip(ours, theirs))
        if not same:
            bad += 1
            if bad <= 3:
                print("  %s: %r -> ours %r, FTS5 %r" % (tag, query, ours[:3], theirs[:3]))
    check(bad == 0, "%s: %d of %d queries differ from FTS5" % (tag, bad, nq))
    check(nonempty > nq // 3, "%s: only %d of %d queries matched anything" % (tag, nonempty, nq))
    return bad


def info(db):
    return json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])["text"]


def test_states(tmp):
    rng = random.Random(1)
    m = Mirror(os.path.join(tmp, "a.h5"))
    m.put([make_record(rng, i) for i in range(1, 3001)])
    compare(m, rng, 100, "in memory")
    check(info(m.db)["image_rows"] == 0, "no image before a checkpoint")
    m.db.execute("SELECT h5mem_checkpoint('mem')")
    t = info(m.db)
    check(t["image_rows"] == 3000 and t["in_place"] and t["note"] == "", "image saved: %r" % t)
    compare(m, rng, 100, "saved image")
    # rows past the image: below the save threshold they stay a tail
    m.put([make_record(rng, i) for i in range(3001, 3201)])
    m.db.execute("SELECT h5mem_checkpoint('mem')")
    check(info(m.db)["image_rows"] == 3000, "200 rows do not trigger a save")
    compare(m, rng, 100, "image + tail")
    check(info(m.db)["memory_rows"] == 200, "the tail is tokenized in memory")
    m.delete(rng.sample(sorted(m.recs), 400))
    compare(m, rng, 100, "after deletes")
    m.update(rng, rng.sample(sorted(m.recs), 200))
    compare(m, rng, 100, "after updates")
    # a rolled-back transaction leaves nothing
    m.db.execute("BEGIN")
    m.db.executemany("INSERT INTO mem(id, text, embedding) VALUES (?, ?, '[1,0,0,0]')",
                     [(9000 + i, "coffee coffee coffee river") for i in range(50)])
    m.db.execute("DELETE FROM mem WHERE id IN (SELECT id FROM mem LIMIT 100)")
    m.db.execute("ROLLBACK")
    compare(m, rng, 100, "after a rollback")
    # then new records take the positions the rolled-back ones had
    m.put([make_record(rng, i) for i in range(3201, 3301)])
    compare(m, rng, 100, "positions taken again")
    m.db.execute("SELECT h5mem_checkpoint('mem')")
    m.reopen()
    compare(m, rng, 100, "reopened")
    m.db.execute("SELECT h5mem_checkpoint('mem')")
    m.db.execute("INSERT INTO mem(mem) VALUES ('optimize')")
    t = info(m.db)
    check(t["image_rows"] == len(m.recs), "optimize saves an image of the live rows: %r" % t)
    compare(m, rng, 100, "after optimize")
    # the image in the file, as h5py sees it
    m.db.close()
    with h5py.File(m.path, "r") as f:
        saves = f["/index/text_saves"][()]
        img = f["/index/text_image"]
        check(saves.shape[1] == 4 and saves[-1][2] == len(m.recs), "text_saves: %r" % saves[-1])
        off, ln = int(saves[-1][0]), int(saves[-1][1])
        head = bytes(img[off:off + 8])
        check(head == b"H5MTXT1\0", "the image starts with its magic: %r" % head)
    return m.path


def test_full_run(tmp):
    """500 queries on one store, half before and half after a checkpoint."""
    rng = random.Random(2)
    m = Mirror(os.path.join(tmp, "full.h5"))
    m.put([make_record(rng, i) for i in range(1, 5001)])
    compare(m, rng, 250, "500 queries (log)")
    m.db.execute("SELECT h5mem_checkpoint('mem')")
    compare(m, rng, 250, "500 queries (image)")
    m.db.close()


def test_tokenizers(tmp):
    for ti, (tok, fts, opts) in enumerate([
            ("porter unicode61", "porter unicode61", '{"porter": true}'),
            ("unicode61 remove_diacritics 0", "unicode61 remove_diacritics 0",
             '{"remove_diacritics": 0}'),
            ("unicode61 remove_diacritics 2", "unicode61 remove_diacritics 2",
             '{"remove_diacritics": 2}')]):
        rng = random.Random(3)
        m = Mirror(os.path.join(tmp, "tok%d.h5" % ti), tok, fts)
        m.put([make_record(rng, i) for i in range(1, 1501)])
        compare(m, rng, 60, tok + " (log)", opts)
        m.db.execute("SELECT h5mem_checkpoint('mem')")
        compare(m, rng, 60, tok + " (image)", opts)
        t = info(m.db)
        check(t["tokenize"] == (tok if "remove" in tok else tok + " remove_diacritics 1"),
              "tokenize kept: %r" % t)
        m.reopen()
        compare(m, rng, 40, tok + " (reopened)", opts)
        m.db.close()
    db = connect()
    expect_error(db, "CREATE VIRTUAL TABLE x USING h5mem(path=%s, dim=4, tokenize='trigram')"
                 % q(os.path.join(tmp, "bad.h5")), "tokenize")
    check(not os.path.exists(os.path.join(tmp, "bad.h5")), "a bad tokenize creates no file")


def test_filters(tmp):
    rng = random.Random(4)
    m = Mirror(os.path.join(tmp, "filt.h5"))
    m.put([make_record(rng, i) for i in range(1, 2001)])
    m.db.execute("SELECT h5mem_checkpoint('mem')")
    m.put([make_record(rng, i) for i in range(2001, 2301)])
    for where, fwhere, args in [
            (" WHERE source = ?", " AND m.source = ?", ("tool",)),
            (" WHERE session = ?", " AND m.session = ?", ("s3",)),
            (" WHERE tier = ? AND source = ?", " AND m.tier = ? AND m.source = ?", ("cold", "user")),
            (" WHERE ts BETWEEN ? AND ?", " AND m.ts BETWEEN ? AND ?",
             (1_700_100_000, 1_700_300_000)),
            (" WHERE id IN (%s)" % ",".join(str(i) for i in range(1, 2301, 7)),
             " AND m.id IN (%s)" % ",".join(str(i) for i in range(1, 2301, 7)), ())]:
        compare(m, rng, 40, "filter" + where[:40], where=where, fwhere=fwhere, args=args)
    # k larger than the matches: all of them; k = 0: none
    n_all = m.db.execute("SELECT count(*) FROM bm25('mem', 'coffee', 100000)").fetchone()[0]
    n_fts = m.db.execute("SELECT count(*) FROM f WHERE f MATCH 'coffee'").fetchone()[0]
    check(n_all == n_fts and n_all > 0, "every match when k is large: %d vs %d" % (n_all, n_fts))
    check(m.db.execute("SELECT count(*) FROM bm25('mem', 'coffee', 0)").fetchone()[0] == 0, "k = 0")
    rows = m.db.execute("SELECT id, score, text, source, session, ts, tier FROM bm25('mem', "
                        "'coffee', 3)").fetchall()
    for r in rows:
        rec = m.recs[r[0]]
        check((r[2], r[3], r[4], r[5], r[6]) == (rec[1], rec[2], rec[3], rec[5], rec[4]),
              "columns of %r" % (r,))
    # ORDER BY score DESC is the order already; a join works
    j = m.db.execute("SELECT b.id FROM bm25('mem', 'coffee tea', 5) b JOIN mem USING (id) "
                     "ORDER BY b.score DESC").fetchall()
    check(len(j) == 5, "join with the store")
    m.db.close()


def test_damage_and_errors(tmp, path):
    # a damaged image: the store opens, says why, answers from memory
    with h5py.File(path, "r") as f:
        saves = f["/index/text_saves"][()]
    off = int(saves[-1][0])
    with h5py.File(path, "r+") as f:
        d = f["/index/text_image"]
        d[off + 200:off + 208] = [0xAA] * 8
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
    n = db.execute("SELECT count(*) FROM bm25('mem', 'coffee', 1000)").fetchone()[0]
    t = info(db)
    check("damaged" in t["note"], "a damaged image is reported: %r" % t)
    db.execute("CREATE VIRTUAL TABLE f USING fts5(t)")
    db.execute("INSERT INTO f(rowid, t) SELECT id, text FROM mem WHERE text IS NOT NULL")
    n_fts = db.execute("SELECT count(*) FROM f WHERE f MATCH 'coffee'").fetchone()[0]
    check(n == n_fts and n > 0, "answers despite the damage: %d vs %d" % (n, n_fts))
    # errors
    expect_error(db, "SELECT * FROM bm25('mem', 1234, 10)", "TEXT")
    expect_error(db, "SELECT * FROM bm25('mem', 'x', -1)", "k must be")
    expect_error(db, "SELECT * FROM bm25('nosuch', 'x', 10)", "nosuch")
    expect_error(db, "SELECT * FROM bm25('mem', 'x', 10, '{\"k1\": 2}')", "unknown option")
    expect_error(db, "SELECT * FROM bm25('mem', 'x', 10, 'nope')", "JSON")
    check(db.execute("SELECT count(*) FROM bm25('mem', NULL, 10)").fetchone()[0] == 0,
          "a NULL query matches nothing")
    check(db.execute("SELECT count(*) FROM bm25('mem', '!!! ...', 10)").fetchone()[0] == 0,
          "a query without words matches nothing")
    db.close()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = test_states(tmp)
        test_full_run(tmp)
        test_tokenizers(tmp)
        test_filters(tmp)
        test_damage_and_errors(tmp, path)
    finish()


if __name__ == "__main__":
    main()
