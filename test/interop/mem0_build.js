'use strict';
// Builds a fixture of mem0's own SQLite stores (npm mem0ai 3.3.1, the OSS
// `Memory` class with its default "memory" vector store and "sqlite" history
// store), for h5mem's mem0 migration mapping.
//
//   node mem0_build.js OUTDIR
//
// Writes into OUTDIR: vector_store.db (table vectors), vector_store_entities.db
// (the entity store mem0 derives from the vector store's path), history.db
// (memory_history, messages; mem0's own default name is memory.db in the
// working folder) and expected.json (what mem0 says it stored, the embeddings
// served, the history, the entities, and every request the server saw).
// No network: mem0's OpenAI embedder (and its LLM client, which infer:false
// never calls) point at a server on 127.0.0.1 started here, whose embeddings
// are a deterministic function of the text; telemetry is off (MEM0_TELEMETRY
// is read when the package loads, so it is set before require), and mem0's
// config folder (MEM0_DIR, where it keeps an anonymous user id) is a
// temporary folder removed at the end. Prints nothing but errors; exit 0.

process.env.MEM0_TELEMETRY = 'false';
delete process.env.OPENAI_API_KEY;

const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const crypto = require('crypto');

const DIM = 8;
const MODEL = 'h5mem-test-embed';

// Everything mem0 might print on stdout goes to stderr instead, so stdout stays
// empty; console.debug/info/log are only used by mem0 for failures or notices.
for (const k of ['log', 'info', 'debug']) console[k] = (...a) => console.error(...a);

let mem0Dir = null;
function die(msg) {
  process.stderr.write(`mem0_build: ${msg}\n`);
  if (mem0Dir) fs.rmSync(mem0Dir, { recursive: true, force: true });
  process.exit(1);
}

const outdir = process.argv[2];
if (!outdir || process.argv.length !== 3) die('usage: node mem0_build.js OUTDIR');
fs.mkdirSync(outdir, { recursive: true });
const out = path.resolve(outdir);
const FILES = {
  vectors: path.join(out, 'vector_store.db'),
  entities: path.join(out, 'vector_store_entities.db'),
  history: path.join(out, 'history.db'),
  expected: path.join(out, 'expected.json'),
};
for (const f of Object.values(FILES)) fs.rmSync(f, { force: true });
for (const f of fs.readdirSync(out)) {
  if (/^(vector_store|vector_store_entities|history)\.db-(journal|wal|shm)$/.test(f)) fs.rmSync(path.join(out, f));
}
mem0Dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mem0dir-'));
process.env.MEM0_DIR = mem0Dir;

// Deterministic embedding: sha256("h5mem:" + i + ":" + text) gives component i
// in [-1, 1); the vector is normalised, then each component rounded to float32
// so the numbers here are exactly the float32 values mem0 stores.
function embed(text, dim = DIM) {
  const v = [];
  for (let i = 0; i < dim; i++) {
    const h = crypto.createHash('sha256').update(`h5mem:${i}:${text}`).digest();
    v.push(h.readUInt32LE(0) / 2147483648 - 1);
  }
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0)) || 1;
  return v.map((x) => Math.fround(x / n));
}

// Every request the fake OpenAI server sees, in order (method, path, what it was asked).
const requests = [];
const served = new Map(); // text -> embedding the server returned

function startServer() {
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      let j = {};
      try { j = body ? JSON.parse(body) : {}; } catch (e) { j = { unparsable: body }; }
      const p = req.url.split('?')[0];
      const send = (code, obj) => {
        const s = JSON.stringify(obj);
        res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
        res.end(s);
      };
      if (req.method === 'POST' && /\/embeddings$/.test(p)) {
        const inputs = Array.isArray(j.input) ? j.input : [j.input];
        const dim = Number.isInteger(j.dimensions) ? j.dimensions : DIM;
        requests.push({ method: req.method, path: p, model: j.model, dimensions: j.dimensions,
          encoding_format: j.encoding_format, input: inputs });
        if (j.encoding_format && j.encoding_format !== 'float') {
          return send(400, { error: { message: `encoding_format ${j.encoding_format} not served` } });
        }
        const data = inputs.map((t, i) => {
          const e = embed(String(t), dim);
          served.set(String(t), e);
          return { object: 'embedding', index: i, embedding: e };
        });
        const tokens = inputs.reduce((s, t) => s + String(t).split(/\s+/).length, 0);
        return send(200, { object: 'list', data, model: j.model || MODEL,
          usage: { prompt_tokens: tokens, total_tokens: tokens } });
      }
      if (req.method === 'POST' && /\/chat\/completions$/.test(p)) {
        requests.push({ method: req.method, path: p, model: j.model, messages: (j.messages || []).length });
        process.stderr.write(`mem0_build: unexpected LLM call ${p}\n`);
        return send(200, {
          id: 'chatcmpl-h5mem', object: 'chat.completion', created: 0, model: j.model || 'h5mem-test-llm',
          choices: [{ index: 0, finish_reason: 'stop',
            message: { role: 'assistant', content: '{"memory": []}' } }],
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
        });
      }
      requests.push({ method: req.method, path: p });
      process.stderr.write(`mem0_build: unexpected request ${req.method} ${p}\n`);
      return send(404, { error: { message: 'not found' } });
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// Anything that tries the network through global fetch (telemetry, notices)
// is refused and recorded; openai uses its own node-fetch, which goes to our server.
const refusedFetches = [];
const realFetch = globalThis.fetch;
globalThis.fetch = async (url, opts) => {
  const u = String(url && url.url ? url.url : url);
  if (/^https?:\/\/127\.0\.0\.1[:/]/.test(u)) return realFetch(url, opts);
  refusedFetches.push(u);
  process.stderr.write(`mem0_build: refused fetch ${u}\n`);
  throw new Error(`network refused: ${u}`);
};

async function main() {
  const server = await startServer();
  const base = `http://127.0.0.1:${server.address().port}/v1`;
  const { Memory } = require('mem0ai/oss');
  const mem0Version = JSON.parse(fs.readFileSync(
    path.join(path.dirname(require.resolve('mem0ai/oss')), '..', '..', 'package.json'), 'utf8')).version;

  const memory = new Memory({
    version: 'v1.1',
    embedder: { provider: 'openai', config: { apiKey: 'test', baseURL: base, model: MODEL, embeddingDims: DIM } },
    vectorStore: { provider: 'memory', config: { collectionName: 'memories', dimension: DIM, dbPath: FILES.vectors } },
    llm: { provider: 'openai', config: { apiKey: 'test', baseURL: base, model: 'h5mem-test-llm' } },
    historyStore: { provider: 'sqlite', config: { historyDbPath: FILES.history } },
  });

  const ids = {}; // label -> mem0 id
  const adds = [];
  async function add(label, messages, opts) {
    const r = await memory.add(messages, { infer: false, ...opts });
    const got = r.results.map((x) => x.id);
    const labels = Array.isArray(label) ? label : [label];
    if (got.length !== labels.length) die(`add ${labels} returned ${got.length} results`);
    labels.forEach((l, i) => { ids[l] = got[i]; });
    adds.push({ labels, opts, results: r.results });
  }

  // 12 memories: two users, an agent, runs, metadata of several JSON types.
  await add('a1', 'Alice likes green tea in the morning', { userId: 'alice', metadata: { category: 'food', priority: 2 } });
  await add('a2', 'Alice is allergic to peanuts', { userId: 'alice', metadata: { category: 'health', tags: ['allergy', 'food'], verified: true } });
  await add('a3', 'Alice plays the cello on weekends', { userId: 'alice', metadata: { category: 'hobby', level: { years: 7, grade: 'advanced' } } });
  await add('a4', 'Alice wants to visit Kyoto next spring', { userId: 'alice', metadata: { category: 'travel', score: 0.75 } });
  await add('a5', 'Alice reads science fiction novels', { userId: 'alice', runId: 'run-2024-05', metadata: { category: 'books' } });
  await add('b1', 'Bob runs five kilometres every day', { userId: 'bob', metadata: { category: 'fitness', note: null } });
  await add('b2', 'Bob prefers window seats on long flights', { userId: 'bob', metadata: { category: 'travel', unicode: 'caf\u00e9 \u65e5\u672c' } });
  // one call with a messages array: a system message is skipped, each other
  // message is one memory; mem0 does not store the role.
  await add(['b3', 'b4'], [
    { role: 'system', content: 'You are a helpful assistant' },
    { role: 'user', content: 'Bob has a cat named Miso' },
    { role: 'assistant', content: 'Bob\'s cat Miso is three years old' },
  ], { userId: 'bob', agentId: 'support-bot', runId: 'session-42', metadata: { source: 'chat' } });
  await add('g1', 'The support bot answers in a friendly tone', { agentId: 'support-bot', metadata: { category: 'style' } });
  await add('g2', 'Escalate billing questions to the finance team', { agentId: 'support-bot', metadata: { category: 'policy' }, expirationDate: '2099-12-31' });
  await add('r1', 'Run-only memory: benchmark results are stored in bucket seven', { runId: 'run-only-1' });

  // Updates: text changes link rule-based entities (no LLM) into the entity store.
  await memory.update(ids.a4, { text: 'Alice wants to visit Kyoto and Osaka with Bob in April' });
  await memory.update(ids.a3, { text: 'Alice plays the cello in Berlin' });
  await memory.update(ids.a1, { text: 'Alice now drinks Earl Grey instead of green tea' });
  await memory.update(ids.b2, { metadata: { seat: 'window', category: 'travel-pref' } }); // metadata only
  await memory.update(ids.g1, { text: 'The Support Bot answers in a friendly tone and signs as "Mia"' });
  // second update of a1: its old entities go, "Berlin" and "Kyoto" (already
  // linked to a3 and a4) gain a1 in linkedMemoryIds.
  await memory.update(ids.a1, { text: 'Alice now drinks Earl Grey tea in Berlin and Kyoto' });
  // Deletes: one memory without entities, and a3, whose "Berlin" entity is
  // shared with a1 (it keeps only a1) and whose other entities go.
  await memory.delete(ids.a2);
  await memory.delete(ids.a3);

  const allIds = Object.entries(ids);
  const present = [];
  const history = {};
  const Database = require('better-sqlite3');
  const vdb = new Database(FILES.vectors, { readonly: true });
  const rawRow = vdb.prepare('SELECT id, vector, payload FROM vectors WHERE id = ?');
  for (const [label, id] of allIds) {
    history[id] = { label, events: await memory.history(id) };
    const m = await memory.get(id);
    if (!m) continue;
    const row = rawRow.get(id);
    const stored = Array.from(new Float32Array(row.vector.buffer, row.vector.byteOffset, row.vector.byteLength / 4));
    const e = embed(m.memory);
    if (!served.has(m.memory)) die(`server never embedded ${JSON.stringify(m.memory)}`);
    if (stored.length !== DIM || stored.some((x, i) => x !== e[i])) die(`stored vector of ${id} is not the served one`);
    present.push({
      label, id, text: m.memory,
      user_id: m.user_id ?? null, agent_id: m.agent_id ?? null, run_id: m.run_id ?? null,
      metadata: m.metadata, hash: m.hash,
      createdAt: m.createdAt ?? null, updatedAt: m.updatedAt ?? null,
      embedding: e,
      vector_hex: row.vector.toString('hex'),
      payload: JSON.parse(row.payload),
      payload_text: row.payload,
    });
  }
  const migrations = vdb.prepare('SELECT id, user_id FROM memory_migrations ORDER BY id').all();
  vdb.close();

  let entities = [];
  if (fs.existsSync(FILES.entities)) {
    const edb = new Database(FILES.entities, { readonly: true });
    entities = edb.prepare('SELECT id, vector, payload FROM vectors ORDER BY rowid').all().map((r) => {
      const payload = JSON.parse(r.payload);
      const stored = Array.from(new Float32Array(r.vector.buffer, r.vector.byteOffset, r.vector.byteLength / 4));
      const e = embed(payload.data);
      if (stored.some((x, i) => x !== e[i])) die(`entity vector of ${r.id} is not the served one`);
      return { id: r.id, text: payload.data, entityType: payload.entityType,
        linkedMemoryIds: payload.linkedMemoryIds, user_id: payload.user_id ?? null,
        agent_id: payload.agent_id ?? null, run_id: payload.run_id ?? null,
        embedding: e, payload, payload_text: r.payload };
    });
    edb.close();
  }
  const hdb = new Database(FILES.history, { readonly: true });
  const historyRows = hdb.prepare('SELECT * FROM memory_history ORDER BY id').all();
  const messages = hdb.prepare('SELECT * FROM messages ORDER BY rowid').all();
  hdb.close();

  if (memory.db && typeof memory.db.close === 'function') memory.db.close();
  await new Promise((r) => server.close(r));

  const mem0DirFiles = fs.readdirSync(mem0Dir);
  fs.rmSync(mem0Dir, { recursive: true, force: true });
  const expected = {
    mem0ai_version: mem0Version,
    node_version: process.version,
    dim: DIM,
    embedding_model: MODEL,
    embedding_function: 'v[i] = u32le(sha256("h5mem:" + i + ":" + text)[0..4]) / 2^31 - 1; v /= |v|; each rounded to float32',
    vector_encoding: 'float32 little-endian, DIM*4 bytes, no header',
    files: fs.readdirSync(out).filter((f) => f !== 'expected.json').concat('expected.json').sort(),
    mem0_dir_files: mem0DirFiles,
    telemetry_user_id: migrations.length ? migrations[0].user_id : null,
    memory_migrations: migrations,
    memories: present,
    deleted: allIds.filter(([, id]) => !present.some((p) => p.id === id)).map(([label, id]) => ({ label, id })),
    ids,
    adds,
    history,
    history_rows: historyRows,
    messages,
    entities,
    requests,
    refused_fetches: refusedFetches,
  };
  fs.writeFileSync(FILES.expected, JSON.stringify(expected, null, 2) + '\n');
  if (refusedFetches.length) die(`mem0 tried the network: ${refusedFetches.join(', ')}`);
}

main().then(() => process.exit(0), (e) => die(e && e.stack ? e.stack : String(e)));
