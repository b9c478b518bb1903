// bench/bench_mcp.js - h5mem-mcp against the reference MCP memory server
// (@modelcontextprotocol/server-memory, npm), both driven through the MCP
// TypeScript SDK's client over stdio, in the same run, on the same graph
// (issue 23):
//
//   (cd test/interop && npm ci)     # the SDK and the reference server
//   node bench/bench_mcp.js [--sizes 1000,10000] [--calls 200]
//
// run from the build directory (./h5mem-mcp).  For each size N: N entities
// (5 types, 2 observations each, words from a 200-word vocabulary, seeded)
// and N relations, made through create_entities / create_relations in
// batches of 1000 on both servers (timed: "made in").  Then each server is
// started again and timed: the connection (spawn to the initialize
// handshake's end, the SDK's connect), its first call (search_nodes, on a
// graph it has to read; h5mem-mcp answers it from the search image it
// wrote beside the store as it last ended, and starts reading the graph
// when its store is open, while the client connects; its first call
// without the image is timed too, on a start with the image removed),
// then, after `settle` ms (2000) of
// quiet on both servers (h5mem-mcp indexes its graph for search_nodes in
// the background meanwhile: 100K entities take about a second), its first
// recall (which loads the vector index) alone, then
// `calls` search_nodes calls (a query naming an entity, e.g. "e123": up to
// 11 entities match) and, for h5mem-mcp, recall calls (two vocabulary
// words, k = 10); `calls` pings give the round trip's floor (the SDK, the
// pipe, JSON-RPC) on each server.  Times are the client's, from the call to
// its result, in microseconds.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const interop = path.join(__dirname, '..', 'test', 'interop', 'node_modules');
const req = (m) => require(path.join(interop, m));
const {Client} = req('@modelcontextprotocol/sdk/dist/cjs/client/index.js');
const {StdioClientTransport} = req('@modelcontextprotocol/sdk/dist/cjs/client/stdio.js');
const reference = path.join(interop, '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
const server = path.join(process.cwd(), 'h5mem-mcp');

const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const sizes = arg('--sizes', '1000,10000').split(',').map(Number);
const ncalls = Number(arg('--calls', '200'));
const settle = Number(arg('--settle', '2000'));

let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000);
const pick = (a) => a[Math.floor(rand() * a.length)];
const vocab = Array.from({length: 200}, (_, i) => `w${i.toString(36)}x${(i * 7919 % 997).toString(36)}`);
const sentence = () => Array.from({length: 6}, () => pick(vocab)).join(' ');

async function start(which, dir) {
  const t = which === 'ours'
    ? new StdioClientTransport({command: server, args: ['--store', path.join(dir, 'memory.h5')],
                                env: {PATH: process.env.PATH}, stderr: 'inherit'})
    : new StdioClientTransport({command: process.execPath, args: [reference],
                                env: {PATH: process.env.PATH, MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl')},
                                stderr: 'ignore'});
  const c = new Client({name: 'bench', version: '1.0.0'});
  const t0 = process.hrtime.bigint();
  await c.connect(t);
  c.connectMs = Number(process.hrtime.bigint() - t0) / 1e6;
  return c;
}

async function timed(c, name, args) {
  const t0 = process.hrtime.bigint();
  const r = await c.callTool({name, arguments: args});
  const us = Number(process.hrtime.bigint() - t0) / 1000;
  if (r.isError) throw new Error(`${name}: ${r.content[0].text}`);
  return us;
}

// The same server driven without the SDK: JSON-RPC lines written to its
// stdin and read from its stdout, one call at a time (what the server
// itself costs, without the SDK's schema checks and parsing on the
// client's side).
async function rawStart(which, dir) {
  const {spawn} = require('node:child_process');
  const p = which === 'ours'
    ? spawn(server, ['--store', path.join(dir, 'memory.h5')], {stdio: ['pipe', 'pipe', 'ignore']})
    : spawn(process.execPath, [reference], {env: {...process.env, MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl')},
                                            stdio: ['pipe', 'pipe', 'ignore']});
  let buf = '', wake = null;
  p.stdout.on('data', (d) => {
    buf += d;
    if (wake && buf.includes('\n')) wake();
  });
  let id = 0;
  const call = async (method, params) => {
    p.stdin.write(JSON.stringify({jsonrpc: '2.0', id: ++id, method, params}) + '\n');
    for (;;) {
      const nl = buf.indexOf('\n');
      if (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const m = JSON.parse(line);
        if (m.id === id) return m;
        continue; // (a notification)
      }
      await new Promise((resolve) => { wake = resolve; });
      wake = null;
    }
  };
  await call('initialize', {protocolVersion: '2025-06-18', capabilities: {}, clientInfo: {name: 'raw', version: '1'}});
  p.stdin.write(JSON.stringify({jsonrpc: '2.0', method: 'notifications/initialized'}) + '\n');
  return {call, close: () => new Promise((resolve) => { p.once('close', resolve); p.stdin.end(); })};
}

async function rawTimed(r, name, args) {
  const t0 = process.hrtime.bigint();
  const m = await r.call('tools/call', {name, arguments: args});
  if (m.error || m.result.isError) throw new Error(`${name}: ${JSON.stringify(m).slice(0, 200)}`);
  return Number(process.hrtime.bigint() - t0) / 1000;
}

const pct = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };

async function main() {
  const commit = require('node:child_process').execSync('git rev-parse --short=12 HEAD', {cwd: path.join(__dirname, '..')})
    .toString().trim();
  console.log(`# ${new Date().toISOString().slice(0, 10)}, commit ${commit}, node ${process.version}, ${ncalls} calls a row, ` +
              `${settle} ms settle`);
  console.log('\n| N | server | made in s | connect ms | first call ms | without the image ms | ping p50 µs | ' +
              'search_nodes p50 µs | p99 µs | first recall ms | recall p50 µs | p99 µs | close ms | ' +
              'raw search_nodes p50 µs | raw recall p50 µs |');
  console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const n of sizes) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench_mcp_'));
    const types = ['person', 'place', 'project', 'tool', 'event'];
    const ents = Array.from({length: n}, (_, i) => ({name: `e${i}`, entityType: types[i % 5],
                                                   observations: [sentence(), sentence()]}));
    const rels = Array.from({length: n}, () => ({from: `e${Math.floor(rand() * n)}`, to: `e${Math.floor(rand() * n)}`,
                                               relationType: pick(['knows', 'uses', 'part_of'])}));
    const made = {};
    for (const which of ['ours', 'reference']) {
      const t0 = process.hrtime.bigint();
      const c = await start(which, dir);
      for (let i = 0; i < n; i += 1000) await c.callTool({name: 'create_entities', arguments: {entities: ents.slice(i, i + 1000)}});
      for (let i = 0; i < n; i += 1000) await c.callTool({name: 'create_relations', arguments: {relations: rels.slice(i, i + 1000)}});
      await c.close();
      made[which] = Number(process.hrtime.bigint() - t0) / 1e9;
    }
    const queries = Array.from({length: ncalls}, () => `e${Math.floor(rand() * n)}`);
    const recalls = Array.from({length: ncalls}, () => `${pick(vocab)} ${pick(vocab)}`);
    // h5mem-mcp's first call without its search image (as after a crash,
    // or the first start on a store): the image removed, then written
    // again as that server ends
    let firstNoImage = null;
    {
      fs.rmSync(path.join(dir, 'memory.h5-mcp'), {force: true});
      const c = await start('ours', dir);
      firstNoImage = await timed(c, 'search_nodes', {query: queries[0]});
      await c.close();
      if (!fs.existsSync(path.join(dir, 'memory.h5-mcp'))) throw new Error('no search image written');
    }
    for (const which of ['ours', 'reference']) {
      const c = await start(which, dir);
      const first = await timed(c, 'search_nodes', {query: queries[0]});
      await new Promise((resolve) => setTimeout(resolve, settle));
      const firstRecall = which === 'ours' ? await timed(c, 'recall', {query: recalls[0], k: 10}) : null;
      const pings = [];
      for (let i = 0; i < ncalls; i++) {
        const t0 = process.hrtime.bigint();
        await c.ping();
        pings.push(Number(process.hrtime.bigint() - t0) / 1000);
      }
      const s = [];
      for (const q of queries) s.push(await timed(c, 'search_nodes', {query: q}));
      const r = [];
      if (which === 'ours') for (const q of recalls) r.push(await timed(c, 'recall', {query: q, k: 10}));
      const t0 = process.hrtime.bigint();
      await c.close(); // (the SDK's close: stdin ends, the process is waited for)
      const closeMs = Number(process.hrtime.bigint() - t0) / 1e6;
      // the same calls without the SDK, on the server started again
      const raw = await rawStart(which, dir);
      await rawTimed(raw, 'search_nodes', {query: queries[0]});
      await new Promise((resolve) => setTimeout(resolve, settle));
      const rs = [], rr = [];
      for (const q of queries) rs.push(await rawTimed(raw, 'search_nodes', {query: q}));
      if (which === 'ours') {
        await rawTimed(raw, 'recall', {query: recalls[0], k: 10});
        for (const q of recalls) rr.push(await rawTimed(raw, 'recall', {query: q, k: 10}));
      }
      await raw.close();
      const f = (x) => x.toFixed(0), f1 = (x) => x.toFixed(1);
      console.log(`| ${n} | ${which === 'ours' ? 'h5mem-mcp' : 'server-memory 2026.8.31'} | ${f1(made[which])} | ` +
                  `${f1(c.connectMs)} | ${f1(first / 1000)} | ${which === 'ours' ? f1(firstNoImage / 1000) : '-'} | ` +
                  `${f(pct(pings, 0.5))} | ${f(pct(s, 0.5))} | ` +
                  `${f(pct(s, 0.99))} | ${firstRecall === null ? '-' : f1(firstRecall / 1000)} | ` +
                  `${r.length ? f(pct(r, 0.5)) : '-'} | ${r.length ? f(pct(r, 0.99)) : '-'} | ` +
                  `${f1(closeMs)} | ${f(pct(rs, 0.5))} | ${rr.length ? f(pct(rr, 0.5)) : '-'} |`);
    }
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
