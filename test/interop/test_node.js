// The extension through Node's better-sqlite3 (npm, version 12), which
// bundles its own SQLite: h5mem must work through that library's API too.
'use strict';
const assert = require('node:assert/strict');

const {betterSqlite3, extPath} = require('./nodeutil');

const Database = betterSqlite3();
const ext = extPath;
const db = new Database(':memory:');
db.loadExtension(ext);
const one = (sql, ...args) => db.prepare(sql).pluck().get(...args);
let checks = 0;
const test = (name, fn) => { fn(); checks++; console.log(`ok   ${name}`); };

test('identity', () => {
  const info = JSON.parse(one('select h5mem_info()'));
  assert.equal(info.version, one('select h5mem_version()'));
  assert.equal(info.sqlite, one('select sqlite_version()'));
  assert.ok(info.simd_usable.includes(info.simd));
});

test('Float32Array in, Buffer out', () => {
  const v = new Float32Array([0.5, -1.25, 3, 1e-3]);
  const blob = one('select vec_f32(?)', Buffer.from(v.buffer));
  assert.ok(Buffer.isBuffer(blob));
  assert.deepEqual(new Float32Array(blob.buffer, blob.byteOffset, 4), v);
  assert.equal(one('select vec_length(?)', Buffer.from(v.buffer)), 4);
  // exact JSON: the shortest decimals that read back to the same float32s
  const json = one('select vec_to_json(?, 1)', Buffer.from(v.buffer));
  assert.equal(json, '[0.5,-1.25,3,0.001]');
  assert.deepEqual(Float32Array.from(JSON.parse(json)), v);
});

test('distances', () => {
  assert.equal(one("select vec_distance_l2('[1,2]', '[4,6]')"), 5);
  assert.equal(one("select vec_dot('[1,2,3]', '[4,5,6]')"), 32);
  assert.ok(Math.abs(one("select vec_distance_cosine('[1,0]', '[0,1]')") - 1) < 1e-7);
  assert.ok(Math.abs(one("select vec_distance_cosine(vec_f16('[1,0]'), '[1,1]')")
                     - (1 - Math.SQRT1_2)) < 1e-6);
});

test('float16', () => {
  const h = one("select vec_f16('[1, -2, 0.5]')");
  assert.deepEqual([...h], [0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38]);
  assert.equal(one('select vec_type(vec_as_f16(?))', h), 'float16');
});

test('errors are exceptions with the reason', () => {
  const cases = [
    ["select vec_f32('[1,2')", /vec_f32: malformed JSON vector: expected ',' or '\]' at byte 4/],
    ['select vec_f32(NULL)', /got NULL/],
    ["select vec_distance_l2('[1]', '[1,2]')", /dimension mismatch/],
    ["select vec_f16('[1e6]')", /outside the float16 range/],
  ];
  for (const [sql, re] of cases) assert.throws(() => one(sql), re);
  const nan = Buffer.from(new Float32Array([1, NaN]).buffer);
  assert.throws(() => one('select vec_dot(?, ?)', nan, nan), /element 1 is NaN/);
});

test('a table of vectors, ranked in SQL', () => {
  db.exec('create table docs(id integer primary key, emb blob)');
  const ins = db.prepare('insert into docs values (?, vec_f32(?))');
  ins.run(1, '[1,0,0]'); ins.run(2, '[0,1,0]'); ins.run(3, '[0.9,0.1,0]');
  const ids = db.prepare("select id from docs order by vec_distance_cosine(emb, '[1,0,0]')")
    .pluck().all();
  assert.deepEqual(ids, [1, 3, 2]);
});

test('semantic search offline: the store embeds with a static model', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h5mem_node_'));
  try {
    // GloVe text, most frequent word first: common words along one axis
    // (the component SIF removes), three topics along three others
    const stop = ['the', 'a', 'we', 'in', 'to', 'my', 'has', 'is', 'went', 'last', 'with', 'all', 'been', 'week'];
    const topics = [['mountain', 'alps', 'hiking', 'trek', 'summit', 'summer'],
                    ['dog', 'puppy', 'vet', 'sick', 'fever', 'ill'],
                    ['budget', 'finance', 'review', 'money', 'quarterly', 'costs']];
    const lines = stop.map((w, i) => {
      const v = new Array(8).fill(0); v[7] = 1; v[3 + (i % 3)] = 0.1; return `${w} ${v.join(' ')}`;
    });
    topics.forEach((ws, t) => ws.forEach((w, j) => {
      const v = new Array(8).fill(0); v[t] = 1; v[4 + (j % 3)] = 0.2; lines.push(`${w} ${v.join(' ')}`);
    }));
    const src = path.join(dir, 'topics.txt');
    const model = path.join(dir, 'topics.h5');
    fs.writeFileSync(src, lines.join('\n') + '\n');
    const info = JSON.parse(one('select h5mem_embedder_build(?, ?)', src, model));
    assert.equal(info.words, 32);
    const sq = (x) => `'${x.replace(/'/g, "''")}'`;
    db.exec(`create virtual table sem using h5mem(path=${sq(path.join(dir, 's.h5'))}, embedder=${sq('static:' + model)})`);
    const ins = db.prepare('insert into sem(text) values (?)');
    for (const t of ['we went hiking in the alps last summer', 'my dog has been sick all week',
                     'the quarterly budget review']) ins.run(t);
    const top = db.prepare("select id from vec_search('sem', ?, 1)").pluck();
    assert.equal(top.get('a mountain trek'), 1);
    assert.equal(top.get('a puppy with a fever'), 2);
    assert.equal(top.get('money and costs'), 3);
    const v = one("select h5mem_embed('a puppy with a fever', 'sem')");
    const e = one('select embedding from sem where id = 2');
    const f = (b) => new Float32Array(b.buffer, b.byteOffset, b.length / 4);
    const cos = f(v).reduce((acc, x, i) => acc + x * f(e)[i], 0);
    assert.ok(cos > 0.9, `cosine ${cos}`);
    db.exec('drop table sem');
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
});

test('an ephemeral store: key-value use, expiry, a search, a promotion', () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h5mem_node_eph_'));
  try {
    db.exec('create virtual table scratch using h5mem(ephemeral=on, dim=4, ttl=60, key text primary key)');
    one("select h5mem_clock('scratch', 1000)");
    const put = db.prepare('insert or replace into scratch(text, embedding, key) values (?, ?, ?)');
    const get = db.prepare('select text from scratch where key = ?').pluck();
    const vec = (a) => Buffer.from(new Float32Array(a).buffer);
    put.run('one', vec([1, 0, 0, 0]), 'k1');
    put.run('two', vec([0, 1, 0, 0]), 'k2');
    put.run('one again', vec([1, 0.1, 0, 0]), 'k1');
    assert.equal(get.get('k1'), 'one again');
    assert.equal(get.get('nope'), undefined);
    const near = db.prepare("select id from vec_search('scratch', ?, 1)").pluck().get(vec([0, 1, 0, 0]));
    assert.equal(db.prepare('select key from scratch where id = ?').pluck().get(near), 'k2');
    one("select h5mem_clock('scratch', 1060)");
    assert.equal(one('select count(*) from scratch'), 0);
    put.run('three', vec([0, 0, 1, 0]), 'k3');
    db.exec(`create virtual table kept using h5mem(path='${path.join(dir, 'kept.h5')}', dim=4)`);
    assert.equal(one("select h5mem_promote('scratch', 'kept')"), 1);
    assert.equal(one('select text from kept'), 'three');
    assert.equal(one('select count(*) from scratch'), 0);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['kept.h5', 'kept.h5-wal']);
    db.exec('drop table scratch');
    db.exec('drop table kept');
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
});

test('an ephemeral store shared by two connections of the process', () => {
  const a = new Database(':memory:');
  const b = new Database(':memory:');
  a.loadExtension(ext);
  b.loadExtension(ext);
  try {
    const decl = 'create virtual table shared using h5mem(ephemeral=on, dim=4, key text primary key)';
    a.exec(decl);
    b.exec(decl);
    const vec = (v) => Buffer.from(new Float32Array(v).buffer);
    a.prepare('insert into shared(text, embedding, key) values (?, ?, ?)').run('from a', vec([1, 0, 0, 0]), 'ka');
    const getB = b.prepare('select text from shared where key = ?').pluck();
    assert.equal(getB.get('ka'), 'from a');
    b.prepare('insert or replace into shared(text, embedding, key) values (?, ?, ?)').run('from b', vec([0, 1, 0, 0]), 'ka');
    assert.equal(a.prepare('select text from shared where key = ?').pluck().get('ka'), 'from b');
    // a's open transaction is its own until it commits; b cannot write meanwhile
    a.exec('begin');
    a.prepare('insert into shared(text, key) values (?, ?)').run('pending', 'kp');
    assert.equal(getB.get('kp'), undefined);
    assert.throws(() => b.prepare('insert into shared(text, key) values (?, ?)').run('b', 'kb'),
                  /being written by another connection of this thread/);
    a.exec('commit');
    assert.equal(getB.get('kp'), 'pending');
    assert.equal(b.prepare("select s.text from vec_search('shared', ?, 1) v join shared s on s.id = v.id").pluck()
                  .get(vec([0, 1, 0, 0])), 'from b');
    // another declaration of the name is refused
    const c = new Database(':memory:');
    c.loadExtension(ext);
    assert.throws(() => c.exec('create virtual table shared using h5mem(ephemeral=on, dim=8)'), /is open in this process/);
    c.close();
  } finally {
    a.close();
    b.close();
  }
});

console.log(`${checks} checks passed`);
