"""Ids used up: when the largest id of a table is 2^63-1 (INT64_MAX), every
writer that would take the next id says "no ids left", as plain INSERT
does, and leaves the store unchanged (docs/SQL.md, "Knowledge graph"):

- INSERT without an id into mem, mem_entities, mem_relations, mem_mentions
  (the wording the others follow);
- kg_entity of a new name (an existing one still resolves);
- kg_import_jsonl: a new entity, and a new observation (a memory) when the
  memories' ids are used up; the import is all or nothing.

Before the fix kg_entity and kg_import_jsonl computed INT64_MAX + 1 (signed
overflow; UBSan reports it, the release build inserted id
-9223372036854775808).

Run by make check with Debian's /usr/bin/python3.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, failures, finish, q  # noqa: E402

MAX = 9223372036854775807


def state(db):
    return [db.execute("SELECT * FROM %s ORDER BY id" % t).fetchall()
            for t in ("mem_entities", "mem_relations", "mem_mentions")] + [
        db.execute("SELECT id, text FROM mem ORDER BY id").fetchall()]


def main():
    d = tempfile.mkdtemp(prefix="h5mem_kg_ids_")
    fn = os.path.join(d, "ids.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(fn))
    db.execute("INSERT INTO mem(id, text) VALUES (1, 'one')")
    db.execute("INSERT INTO mem_entities(id, name, type) VALUES (1, 'Alice', 'person'), (%d, 'Max', 'person')" % MAX)
    db.execute("INSERT INTO mem_relations(id, src, dst, type) VALUES (%d, 1, %d, 'knows')" % (MAX, MAX))
    db.execute("INSERT INTO mem_mentions(id, memory_id, entity_id) VALUES (%d, 1, 1)" % MAX)
    before = state(db)
    # plain INSERT: the wording
    expect_error(db, "INSERT INTO mem_entities(name) VALUES ('Eve')", "mem_entities: no ids left")
    expect_error(db, "INSERT INTO mem_relations(src, dst) VALUES (1, 1)", "mem_relations: no ids left")
    expect_error(db, "INSERT INTO mem_mentions(memory_id, entity_id) VALUES (1, %d)" % MAX,
                 "mem_mentions: no ids left")
    # kg_entity: a name that resolves needs no id; a new one has none left
    check(db.execute("SELECT kg_entity('mem', 'Max')").fetchone()[0] == MAX, "kg_entity of an existing name")
    check(db.execute("SELECT kg_entity('mem', 'alice')").fetchone()[0] == 1, "kg_entity, case-insensitive")
    expect_error(db, "SELECT kg_entity('mem', 'Eve')", "kg_entity: mem_entities: no ids left")
    expect_error(db, "SELECT kg_entity('mem', 'Eve', 'person')", "kg_entity: mem_entities: no ids left")
    # kg_import_jsonl: known entities and relations pass, a new entity does not, all or nothing
    check(db.execute("SELECT kg_import_jsonl('mem', '{\"type\":\"entity\",\"name\":\"Alice\"}')").fetchone()[0]
          is not None, "an import of known entities")
    jsonl = ('{"type":"entity","name":"Alice"}\n'
             '{"type":"entity","name":"Eve","entityType":"person","observations":["about Eve"]}\n')
    expect_error(db, "SELECT kg_import_jsonl('mem', %s)" % q(jsonl),
                 "kg_import_jsonl: line 2: mem_entities: no ids left")
    # (a mention needs an id too: the mentions' are used up, as plain INSERT says)
    expect_error(db, "SELECT kg_import_jsonl('mem', %s)" % q('{"type":"entity","name":"Alice","observations":["new"]}'),
                 "kg_import_jsonl: line 1: mem_mentions: no ids left")
    check(state(db) == before, "a refused kg_entity / kg_import_jsonl changed the store: %r" % (state(db),))
    # the memories' ids used up: a new observation has no id
    db.execute("INSERT INTO mem(id, text) VALUES (%d, 'last')" % MAX)
    before = state(db)
    expect_error(db, "INSERT INTO mem(text) VALUES ('more')", "h5mem: no ids left")
    expect_error(db, "SELECT kg_import_jsonl('mem', %s)" % q('{"type":"entity","name":"Max","observations":["x"]}'),
                 "kg_import_jsonl: line 1: h5mem: no ids left")
    check(state(db) == before, "a refused observation changed the store")
    # inside a transaction the failure leaves what came before it
    db.execute("BEGIN")
    db.execute("INSERT INTO mem(id, text) VALUES (2, 'two')")
    expect_error(db, "SELECT kg_entity('mem', 'Eve')", "no ids left")
    db.execute("COMMIT")
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 3, "the transaction's own insert stays")
    db.close()
    # and the file reopens with the same ids
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    ids = [r[0] for r in db.execute("SELECT id FROM mem_entities ORDER BY id")]
    check(ids == [1, MAX], "entities after reopening: %r" % ids)
    db.close()
    if not failures:
        shutil.rmtree(d, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
