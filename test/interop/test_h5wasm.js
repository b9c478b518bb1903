// Files our HDF5 writer makes, read by libhdf5 itself as it ships in npm's
// h5wasm: 0.10.3 embeds libhdf5 2.0.0, 0.8.11 (installed as h5wasm-114)
// libhdf5 1.14.6.  Through Node's better-sqlite3 the extension writes
//   - an h5 table (USING h5(schema=...)): integers (int8 .. uint64, exact
//     beyond 2^53), floats (float32/64; h5wasm's JavaScript side has no
//     float16 reader on Node 20), strings, a float32[3] array column;
//     appended in two transactions;
//   - a memory store (USING h5mem) with declared columns, checkpointed;
//   - h5 tables compressed with zstd (after HDF5's shuffle) and blosc
//     (lz4 with byte shuffle, zstd with bit shuffle), read with the filters
//     of npm's h5wasm-plugins (the HDF Group's hdf5_plugins, built for
//     h5wasm);
// and both libraries must open them and read what was written.
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const {betterSqlite3, extPath} = require('./nodeutil');

const Database = betterSqlite3();

async function load(name) {
  try {
    const m = (await import(`${name}/node`)).default;
    const mod = await m.ready;
    // the compression filters of h5wasm-plugins, from its folder
    const plugins = await import('h5wasm-plugins');
    plugins.install_local_plugins(mod);
    return m;
  } catch (e) {
    console.log(`FAIL: ${name} is not installed (npm ci in test/interop): ${e}`);
    process.exit(1);
  }
}

(async () => {
  const ext = extPath;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h5mem_h5wasm_'));
  const db = new Database(':memory:');
  db.loadExtension(ext);

  // an h5 table, two transactions of rows
  const tfile = path.join(dir, 'table.h5');
  db.exec(`CREATE VIRTUAL TABLE t USING h5(file='${tfile}', dataset='/grp/rows', ` +
          `schema='i8 int8, u16 uint16, i64 int64, u64 uint64, f float32, d float64, s text, v float32[3]')`);
  const ins = db.prepare('INSERT INTO t(i8, u16, i64, u64, f, d, s, v) VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
  const rows = [];
  for (let r = 0; r < 2; r++) {
    db.exec('BEGIN');
    for (let i = 0; i < 50; i++) {
      const k = r * 50 + i;
      const row = [k % 100 - 50, k * 600, BigInt(k) * 1000000000000n - 3n, (18446744073709551615n - BigInt(k)),
                   k * 1.5, k / 3, `row ${k} ∑`, JSON.stringify([k, k + 0.5, -k])];
      ins.run(row[0], row[1], row[2], row[3].toString(), row[4], row[5], row[6], row[7]);
      rows.push(row);
    }
    db.exec('COMMIT');
  }

  // h5 tables compressed with zstd and blosc, two transactions each
  const cfile = path.join(dir, 'codecs.h5');
  const codecs = {zstd: "compression='zstd:7', shuffle=1", blosc: "compression='blosc'",
                  blosc_zstd: "compression='blosc:zstd:5', shuffle=2"};
  for (const [name, opts] of Object.entries(codecs)) {
    try {
      db.exec(`CREATE VIRTUAL TABLE c_${name} USING h5(file='${cfile}', dataset='/${name}', ` +
              `schema='x int64, y float64, s text', chunk=32, ${opts})`);
    } catch (e) {
      if (!/this build has no/.test(e.message)) throw e;
      console.log(`SKIP ${name}: ${e.message}`); // (a build without that codec's library)
      delete codecs[name];
      continue;
    }
    const ci = db.prepare(`INSERT INTO c_${name}(x, y, s) VALUES (?, ?, ?)`);
    for (let r = 0; r < 2; r++) {
      db.exec('BEGIN');
      for (let i = 0; i < 100; i++) ci.run(r * 100 + i, (r * 100 + i) * 0.5, `${name} ${r * 100 + i}`);
      db.exec('COMMIT');
    }
  }

  // a memory store with declared columns, checkpointed
  const sfile = path.join(dir, 'mem.h5');
  db.exec(`CREATE VIRTUAL TABLE m USING h5mem(path='${sfile}', dim=4, user_id integer, label text, sync=off)`);
  const mins = db.prepare('INSERT INTO m(id, text, embedding, user_id, label) VALUES (?, ?, ?, ?, ?)');
  db.exec('BEGIN');
  for (let i = 1; i <= 20; i++)
    mins.run(i, `memory ${i}`, Buffer.from(new Float32Array([i, i * 2, -i, 0.5]).buffer), i % 3, `l${i}`);
  db.exec('COMMIT');
  db.prepare("SELECT h5mem_checkpoint('m')").get();
  db.close();

  let checks = 0;
  for (const name of ['h5wasm', 'h5wasm-114']) {
    const h5 = await load(name);
    const f = new h5.File(tfile, 'r');
    const ds = f.get('grp/rows');
    assert.ok(ds, `${name}: /grp/rows`);
    assert.deepEqual(ds.shape, [100]);
    const v = ds.value; // rows of the compound, as arrays in member order
    for (let k = 0; k < 100; k += 7) {
      const got = v[k], want = rows[k];
      assert.equal(Number(got[0]), want[0], `${name} row ${k} int8`);
      assert.equal(Number(got[1]), want[1], `${name} row ${k} uint16`);
      assert.equal(BigInt(got[2]), want[2], `${name} row ${k} int64`);
      assert.equal(BigInt(got[3]), want[3], `${name} row ${k} uint64 (exact)`);
      assert.equal(Number(got[4]), Math.fround(want[4]), `${name} row ${k} float32`);
      assert.equal(Number(got[5]), want[5], `${name} row ${k} float64`);
      assert.equal(got[6], want[6], `${name} row ${k} text`);
      assert.deepEqual(Array.from(got[7]).map(Number), JSON.parse(want[7]).map(Math.fround), `${name} row ${k} float32[3]`);
    }
    f.close();
    checks++;

    const s = new h5.File(sfile, 'r');
    const ids = Array.from(s.get('memories/id').value).map(Number);
    assert.deepEqual(ids, Array.from({length: 20}, (_, i) => i + 1), `${name}: the store's ids`);
    const emb = s.get('memories/embedding');
    assert.deepEqual(emb.shape, [20, 4], `${name}: the embeddings' shape`);
    const e = Array.from(emb.value);
    assert.deepEqual(e.slice(4 * 4, 4 * 5), [5, 10, -5, 0.5], `${name}: record 5's embedding`);
    const uid = Array.from(s.get('memories/columns/user_id').value).map(Number);
    assert.deepEqual(uid, ids.map((i) => i % 3), `${name}: the declared column user_id`);
    const text = s.get('memories/text').value;
    assert.equal(text[6], 'memory 7', `${name}: the text of record 7`);
    s.close();
    checks++;
    const c = new h5.File(cfile, 'r');
    for (const codec of Object.keys(codecs)) {
      const ds = c.get(codec);
      const ids = ds.filters.map((x) => x.id);
      assert.ok(ids.includes(codec === 'zstd' ? 32015 : 32001), `${name}: ${codec}'s filter: ${ids}`);
      const v = ds.value;
      assert.equal(v.length, 200, `${name}: ${codec}: 200 rows`);
      for (let k = 0; k < 200; k += 13) {
        assert.equal(Number(v[k][0]), k, `${name}: ${codec} row ${k} x`);
        assert.equal(Number(v[k][1]), k * 0.5, `${name}: ${codec} row ${k} y`);
        assert.equal(v[k][2], `${codec} ${k}`, `${name}: ${codec} row ${k} s`);
      }
      checks++;
    }
    c.close();
    console.log(`ok   ${name}: the h5 table's 100 rows, the store and the zstd and blosc tables read as written`);
  }
  fs.rmSync(dir, {recursive: true, force: true});
  console.log(`${checks} checks passed`);
})().catch((e) => {
  console.log(`FAIL: ${e.stack || e}`);
  process.exit(1);
});
