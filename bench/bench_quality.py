"""Retrieval quality on a deterministic synthetic multi-session conversation
corpus (in the spirit of seed 002's MemoryArena / LongMemEval runs), issue
7's harness:

  /usr/bin/python3 bench/bench_quality.py [--sessions 400] [--turns 24] [--questions 500] [--seed 7]

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

Modes, each over the same store: bm25; vector (the embeddings are
h5mem_embed_text's hashed words and trigrams, a lexical stand-in for a
model: they say nothing of semantic retrieval); hybrid (weighted 0.4 / 0.6);
RRF; hybrid re-ranked by recency (`rerank`: recency 0.3, half-life 30
days); bm25 on a store with the porter stemmer.  Metrics: Hit@1/5/10 and
MRR at turn level (the evidence turn) and session level (the evidence
session: the rank of the first retrieved turn from it), over all questions.
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
    qs = []
    for _ in range(a.questions):
        n, at = rng.choice(keys)
        ev = facts[(n, at)][-1]
        qs.append((rng.choice(QUESTION).format(n=n, a=at), ev[0], ev[1]))
    return turns, qs


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def load(tmp, name, turns, tokenize=None):
    db = connect()
    path = os.path.join(tmp, name + ".h5")
    opt = ", tokenize='%s'" % tokenize if tokenize else ""
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=%d, sync=off%s)" % (path, DIM, opt))
    db.execute("BEGIN")
    db.executemany("INSERT INTO mem(id, text, embedding, source, session, ts) VALUES "
                   "(?, ?, h5mem_embed_text(?, %d), ?, ?, ?)" % DIM,
                   [(t[0], t[4], t[4], t[3], t[1], t[2]) for t in turns])
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    return db


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=400)
    ap.add_argument("--turns", type=int, default=24)
    ap.add_argument("--questions", type=int, default=500)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True, cwd=SRC).stdout.strip()
    turns, qs = build(a)
    session_of = {t[0]: t[1] for t in turns}
    print("# %s, commit %s; %d sessions x %d turns = %d turns, %d questions, seed %d" % (
        time.strftime("%Y-%m-%d"), commit, a.sessions, a.turns, len(turns), len(qs), a.seed))
    now = turns[-1][2] + 3600
    modes = [
        ("bm25", None, "SELECT id FROM bm25('mem', ?1, 10)"),
        ("vector (hashed words, lexical)", None,
         "SELECT id FROM vec_search('mem', h5mem_embed_text(?1, %d), 10)" % DIM),
        ("hybrid 0.4 / 0.6", None,
         "SELECT id FROM hybrid('mem', ?1, h5mem_embed_text(?1, %d), 10)" % DIM),
        ("RRF (k = 60)", None,
         "SELECT id FROM hybrid('mem', ?1, h5mem_embed_text(?1, %d), 10, '{\"fusion\": \"rrf\"}')" % DIM),
        ("hybrid + recency re-rank", None,
         "SELECT id FROM hybrid('mem', ?1, h5mem_embed_text(?1, %d), 10, '%s')" % (DIM, json.dumps(
             {"rerank": {"recency": 0.3, "half_life_days": 30, "now": now}}))),
        ("bm25, porter stemmer", "porter unicode61", "SELECT id FROM bm25('mem', ?1, 10)"),
    ]
    print()
    print("| mode | turn Hit@1 | Hit@5 | Hit@10 | MRR | session Hit@1 | Hit@5 | Hit@10 | MRR |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="bench_quality_") as tmp:
        dbs = {}
        for name, tok, sql in modes:
            key = tok or "default"
            if key not in dbs:
                dbs[key] = load(tmp, key.replace(" ", "_"), turns, tok)
            db = dbs[key]
            ranked = [[r[0] for r in db.execute(sql, (q[0],))] for q in qs]
            m = score(ranked, qs, session_of)
            print("| %s | %s | %s |" % (name, " | ".join("%.1f%%" % (100 * x) if i < 3 else "%.4f" % x
                                                         for i, x in enumerate(m["turn"])),
                                        " | ".join("%.1f%%" % (100 * x) if i < 3 else "%.4f" % x
                                                   for i, x in enumerate(m["session"]))), flush=True)
        for db in dbs.values():
            db.close()


if __name__ == "__main__":
    main()
