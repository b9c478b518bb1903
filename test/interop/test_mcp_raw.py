#!/usr/bin/python3
"""h5mem-mcp's protocol edges, line by line over its stdio (issue 23):
version negotiation, ping, notifications (no answer), parse errors, invalid
requests, unknown methods and tools, tool errors as results, mangled and
random lines (the server answers or stays silent, never dies), a clean
exit at the end of input with the store checkpointed (h5py reads it), and
bad options (a clear error, exit status 1 or 2), one server per store."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql"))
from sqltest import check, finish  # noqa: E402

SERVER = os.path.join(os.getcwd(), "h5mem-mcp")


def run(args, lines, env=None):
    """Send the lines, close stdin; the answers (parsed), stderr, status."""
    p = subprocess.run([SERVER] + args, input="".join(l + "\n" for l in lines).encode(), capture_output=True,
                       timeout=120, env=env)
    out = []
    for l in p.stdout.decode().splitlines():
        try:
            out.append(json.loads(l))
        except ValueError:
            out.append({"unparsable": l})
    return out, p.stderr.decode(), p.returncode


def req(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m)


def main():
    d = tempfile.mkdtemp(prefix="h5mem_mcp_raw_")
    try:
        store = os.path.join(d, "m.h5")
        init = lambda i, v: req(i, "initialize", {"protocolVersion": v, "capabilities": {},  # noqa: E731
                                                 "clientInfo": {"name": "t", "version": "1"}})
        out, err, rc = run(["--store", store], [
            init(1, "2025-06-18"), init(2, "1999-01-01"), init(3, "2024-11-05"),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            req(4, "ping"),
            "this is not json",
            '{"jsonrpc": "2.0", "id": 5, "method": "ping"',            # cut short
            json.dumps({"id": 6, "method": "ping"}),                     # no jsonrpc
            json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1]}),
            req(8, "prompts/list"),
            req("nine", "tools/call", {"name": "no_such_tool", "arguments": {}}),
            req(10, "tools/call", {"name": "search_nodes", "arguments": {"query": 3}}),
            req(11, "tools/call", {"name": "create_entities", "arguments": {"entities": [
                {"name": "A", "entityType": "t", "observations": ["x"]}]}}),
            json.dumps({"jsonrpc": "2.0", "id": 12, "result": {}}),     # an answer: no reply
            req(13, "tools/list"),
            "",
            req(14, "ping"),
            req(15, "resources/read", {"uri": "memory://other"}),
            req(16, "resources/read", {}),
            req(17, "resources/subscribe", {"uri": "memory://knowledge-graph"}),
            req(18, "tools/call", {"name": "create_entities", "arguments": {"entities": [
                {"name": "B", "entityType": "t", "observations": []}]}}),
        ])
        check(rc == 0, "exit status 0 at the end of input: %d (%s)" % (rc, err))
        by = {m.get("id"): m for m in out}
        check(by[1]["result"]["protocolVersion"] == "2025-06-18", "a known version is echoed")
        check(by[2]["result"]["protocolVersion"] == "2025-11-25", "an unknown one gets the latest")
        check(by[3]["result"]["protocolVersion"] == "2024-11-05", "2024-11-05 is echoed")
        check(by[1]["result"]["serverInfo"]["name"] == "h5mem-mcp", "serverInfo")
        check(by[4]["result"] == {}, "ping")
        parse = [m for m in out if m.get("error", {}).get("code") == -32700]
        check(len(parse) == 2 and all(m["id"] is None for m in parse), "two parse errors, id null: %r" % parse)
        check(by[6]["error"]["code"] == -32600 and by[7]["error"]["code"] == -32600, "invalid requests")
        check(by[8]["error"]["code"] == -32601, "method not found")
        check(by[15]["error"] == {"code": -32602, "message": "MCP error -32602: Resource memory://other not found"},
              "an unknown resource: %r" % by[15])
        check(by[16]["error"]["code"] == -32602, "resources/read without a uri: %r" % by[16])
        note = [i for i, m in enumerate(out) if m.get("method") == "notifications/resources/updated"]
        check(by[17]["result"] == {} and len(note) == 1 and out[note[0] + 1].get("id") == 18 and
              out[note[0]]["params"] == {"uri": "memory://knowledge-graph"},
              "a subscriber is notified before the result: %r" % out[-3:])
        check(by["nine"]["result"]["isError"] and "no_such_tool" in by["nine"]["result"]["content"][0]["text"],
              "an unknown tool is a tool error: %r" % by["nine"])
        check(by[10]["result"]["isError"] and "query" in by[10]["result"]["content"][0]["text"], "a bad argument")
        check(by[11]["result"]["structuredContent"]["entities"][0]["name"] == "A", "a call works")
        check(12 not in by, "an answer gets no reply")
        names = [t["name"] for t in by[13]["result"]["tools"]]
        check(names[:9] == ["create_entities", "create_relations", "add_observations", "delete_entities",
                            "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes"]
              and names[9:] == ["remember", "recall", "forget", "memory_stats"], "tools: %r" % names)
        check(by[14]["result"] == {}, "still answering after all that")
        check(len([m for m in out if "id" in m]) == 18 and len(out) == 19,
              "one answer per request (and the one notification), none for notifications and answers: %d" % len(out))
        # the store, checkpointed at the end: h5py reads the observation
        with h5py.File(store, "r") as f:
            texts = [t.decode() if isinstance(t, bytes) else t for t in f["memories/text"][:]]
            names = [t.decode() if isinstance(t, bytes) else t for t in f["graph/entities/name"][:]]
        check(texts == ["x"] and names == ["A", "B"], "the store holds the entities and observation: %r %r" % (texts, names))
        out, err, rc = run(["--store", store], [req(1, "tools/call", {"name": "read_graph", "arguments": {}}),
                                                req(2, "tools/call", {"name": "search_nodes", "arguments": {"query": "ab"}})])
        check(rc == 0, "a clean exit with the graph kept in memory (LeakSanitizer in ASan builds): %d %s" % (rc, err[-300:]))
        g = out[0]["result"]["structuredContent"]
        check(g == {"entities": [{"name": "A", "entityType": "t", "observations": ["x"]},
                                 {"name": "B", "entityType": "t", "observations": []}], "relations": []},
              "the graph kept across a restart: %r" % g)

        # mangled and random lines: answered or silent, never a crash
        rng = random.Random(7)
        base = [req(1, "ping"), req(2, "tools/call", {"name": "recall", "arguments": {"query": "x", "k": 3}}),
                req(3, "tools/call", {"name": "remember", "arguments": {"text": "hello there friend"}}),
                req(4, "tools/call", {"name": "open_nodes", "arguments": {"names": ["A"]}})]
        lines = []
        for _ in range(300):
            s = list(rng.choice(base))
            for _ in range(rng.randint(1, 4)):
                k = rng.randrange(len(s))
                s[k] = rng.choice('{}[]":,\\0123456789abcxyz \u00e9\u2603')
            lines.append("".join(s))
        lines.append(req(99, "ping"))
        out, err, rc = run(["--store", store], lines)
        check(rc == 0 and out and out[-1].get("id") == 99, "300 mangled lines, then a ping: rc %d, last %r" %
              (rc, out[-1] if out else None))
        check(all("jsonrpc" in m for m in out), "every answer is JSON-RPC")

        # bad options and stores: a message and a failing status
        out, err, rc = run([], [])
        check(rc == 2 and "--store" in err, "no store: %d %r" % (rc, err))
        out, err, rc = run(["--store", os.path.join(d, "no", "such", "dir", "m.h5")], [])
        check(rc == 1 and "h5mem-mcp:" in err, "a store that cannot be made: %d %r" % (rc, err))
        out, err, rc = run(["--store", os.path.join(d, "n.h5"), "--import", os.path.join(d, "none.jsonl")], [])
        check(rc == 1 and "none.jsonl" in err and not os.path.exists(os.path.join(d, "n.h5")),
              "a missing --import file: %d %r" % (rc, err))
        bad = os.path.join(d, "bad.jsonl")
        open(bad, "w").write('{"type":"entity","name":"A","entityType":"t","observations":["x"]}\n{oops\n')
        out, err, rc = run(["--store", os.path.join(d, "b.h5"), "--import", bad], [])
        check(rc == 1 and "line 2" in err and not os.path.exists(os.path.join(d, "b.h5")),
              "a malformed file: nothing made: %d %r" % (rc, err))
        # one server per store: it is the store's writer while it runs
        first = subprocess.Popen([SERVER, "--store", store], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        first.stdin.write((req(1, "ping") + "\n").encode())
        first.stdin.flush()
        check(json.loads(first.stdout.readline())["result"] == {}, "the first server answers")
        out, err, rc = run(["--store", store], [req(1, "ping")])
        check(rc == 1 and "being written by another" in err and not out, "a second server on the store: %d %r" %
              (rc, err))
        first.stdin.close()
        check(first.wait(timeout=60) == 0, "the first ends at the end of its input")
        out, err, rc = run(["--store", store, "--frobnicate"], [])
        check(rc == 2 and "--frobnicate" in err, "an unknown option: %d %r" % (rc, err))
    finally:
        shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
