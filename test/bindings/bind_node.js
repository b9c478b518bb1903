// h5mem from Node's better-sqlite3 (test/interop/node_modules): runs a plan
// of test_bindings.py.   node bind_node.js PLAN STORE EXT
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const srcdir = process.env.H5MEM_SRCDIR || path.join(__dirname, '..', '..');
const Database = require(path.join(srcdir, 'test', 'interop', 'node_modules', 'better-sqlite3'));

const [planPath, store, ext] = process.argv.slice(2);

function param(p) {
  const i = p.indexOf(':'), kind = p.slice(0, i), val = p.slice(i + 1);
  if (kind === 'i') return BigInt(val);
  if (kind === 'r') return Number(val);
  if (kind === 't') return val;
  if (kind === 'v') return Buffer.from(new Float32Array(val.split(',').map(Number)).buffer);
  return null;
}

function fmt(c, v) {
  if (v === null) return 'NULL';
  if (c === 'f') return (Number(v) + 0).toExponential(5).replace(/e([+-])(\d)$/, (_, s, d) => `e${s}0${d}`);
  if (c === 'b') return v.toString('hex');
  return String(v);
}

function connect() {
  const db = new Database(':memory:');
  db.loadExtension(ext);
  return db;
}

let db = connect();
const out = [];
for (const line of fs.readFileSync(planPath, 'utf8').split('\n')) {
  if (!line) continue;
  const [kind, name, cols, sql, ...params] = line.split('\t');
  if (kind === 'reopen') { db.close(); db = connect(); continue; }
  const args = {};
  params.forEach((p, i) => { args[`p${i + 1}`] = param(p); });
  const stmt = db.prepare(sql.replace('@STORE@', store)).safeIntegers(true);
  if (!stmt.reader) { stmt.run(args); continue; }
  const rows = stmt.raw(true).all(args);
  if (kind === 'query') {
    out.push(`== ${name}`);
    for (const r of rows) out.push(r.map((v, i) => fmt(cols[i], v)).join('\t'));
  }
}
db.close();
process.stdout.write(out.join('\n') + '\n');
