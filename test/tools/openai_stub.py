#!/usr/bin/python3
"""test/tools/openai_stub.py - a local server speaking OpenAI's embeddings API
(POST /v1/embeddings), for h5mem's HTTP embedder tests (issue 22).

The request and answer shapes are those of OpenAI's API reference
("Create embeddings"): the request {"model": str, "input": str | [str],
"encoding_format": "float" | "base64", "dimensions": int, "user": str}, the
answer {"object": "list", "data": [{"object": "embedding", "index": i,
"embedding": [...]}], "model": str, "usage": {"prompt_tokens": n,
"total_tokens": n}}, errors {"error": {"message", "type", "param", "code"}}
with 400 (invalid input, e.g. an empty string), 401 (a wrong key), 404 (an
unknown model).  Models are "stub-D" (D dimensions).

A vector is the sum, over the text's lowercased words, of a pseudo-random
unit vector per word (seeded by the word's SHA-256), normalised: texts
sharing words are near.  embed(text, dim) computes it for the tests.

Control (for the tests, not OpenAI's API):
  POST /control {"queue": [step, ...]}  the next answers, one step each:
      {"status": 429 | 500 | ..., "retry_after": "0", "message": "..."}
      {"delay": seconds}                 answer normally after a pause
      {"bad": "dims" | "count" | "not_json" | "index" | "base64" | "nan"}
      {"close": true}                    drop the connection, no answer
  GET /log      every request so far: {"auth": header, "body": json}
  POST /reset   clears the queue and the log
Run: openai_stub.py [--key KEY]; prints the port on stdout's first line.
"""
import argparse
import base64
import hashlib
import json
import re
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np


def embed(text, dim):
    words = re.findall(r"\w+", text.lower())
    v = np.zeros(dim, dtype=np.float64)
    for w in words:
        seed = int.from_bytes(hashlib.sha256(w.encode()).digest()[:8], "little")
        r = np.random.default_rng(seed).standard_normal(dim)
        v += r / np.linalg.norm(r)
    n = np.linalg.norm(v)
    if n > 0:
        v /= n
    return v.astype(np.float32)


class State:
    def __init__(self, key):
        self.key = key
        self.queue = []
        self.log = []
        self.lock = threading.Lock()


def error_body(message, etype="invalid_request_error", code=None, param=None):
    return {"error": {"message": message, "type": etype, "param": param, "code": code}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_json(self, status, obj, headers=None, raw=None):
        body = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length", "0"))
        return self.rfile.read(n)

    def do_GET(self):
        st = self.server.state
        if self.path == "/log":
            with st.lock:
                self.send_json(200, st.log)
        else:
            self.send_json(404, error_body("no such path"))

    def do_POST(self):
        st = self.server.state
        raw = self.read_body()
        if self.path == "/control":
            with st.lock:
                st.queue.extend(json.loads(raw)["queue"])
            return self.send_json(200, {"ok": True})
        if self.path == "/reset":
            with st.lock:
                st.queue.clear()
                st.log.clear()
            return self.send_json(200, {"ok": True})
        if self.path != "/v1/embeddings":
            return self.send_json(404, error_body("Unknown request URL: POST %s" % self.path))
        auth = self.headers.get("Authorization")
        try:
            req = json.loads(raw)
        except ValueError:
            req = None
        with st.lock:
            st.log.append({"auth": auth, "body": req, "content_type": self.headers.get("Content-Type")})
            step = st.queue.pop(0) if st.queue else {}
        if step.get("close"):
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if "delay" in step:
            time.sleep(step["delay"])
        if "status" in step:
            h = {"Retry-After": step["retry_after"]} if "retry_after" in step else {}
            return self.send_json(step["status"], error_body(step.get("message", "stub failure %d" % step["status"]),
                                                             "server_error"), h)
        if st.key is not None and auth != "Bearer " + st.key:
            return self.send_json(401, error_body("Incorrect API key provided: %s" % (auth or "none"),
                                                  code="invalid_api_key"))
        if self.headers.get("Content-Type") != "application/json" or not isinstance(req, dict):
            return self.send_json(400, error_body("We could not parse the JSON body of your request."))
        model = req.get("model")
        m = re.fullmatch(r"stub-(\d+)", model or "")
        if not m:
            return self.send_json(404, error_body("The model `%s` does not exist" % model, code="model_not_found"))
        dim = int(m.group(1))
        inp = req.get("input")
        texts = [inp] if isinstance(inp, str) else inp
        if not isinstance(texts, list) or not texts or len(texts) > 2048 or \
                any(not isinstance(t, str) or t == "" for t in texts):
            return self.send_json(400, error_body("'$.input' is invalid. Please check the API reference.",
                                                  param="input"))
        fmt = req.get("encoding_format", "float")
        data = []
        for i, t in enumerate(texts):
            v = embed(t, dim)
            e = base64.b64encode(v.tobytes()).decode() if fmt == "base64" else [float(x) for x in v]
            data.append({"object": "embedding", "index": i, "embedding": e})
        bad = step.get("bad")
        if bad == "dims":
            data[0]["embedding"] = data[0]["embedding"][:-1]
        elif bad == "count":
            data = data[:-1] if len(data) > 1 else []
        elif bad == "index":
            data[-1]["index"] = 0
        elif bad == "base64":
            for d in data:
                d["embedding"] = base64.b64encode(struct.pack("<%df" % dim, *d["embedding"])).decode()
        data.reverse()  # (placed by index, not by order)
        tokens = sum(len(t.split()) for t in texts)
        ans = {"object": "list", "data": data, "model": model,
               "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
        if bad == "not_json":
            return self.send_json(200, None, raw=b'{"object": "list", "data": [')
        if bad == "nan":
            return self.send_json(200, None, raw=json.dumps(ans).replace("]", ", NaN]", 1).encode())
        self.send_json(200, ans)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--key")
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.state = State(a.key)
    print(srv.server_address[1], flush=True)
    sys.stdout.close()
    srv.serve_forever()


if __name__ == "__main__":
    main()
