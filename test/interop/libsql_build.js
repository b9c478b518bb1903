'use strict';
// Builds a fixture of LangChain.js's libSQL vector store (LibSQLVectorStore
// from npm @langchain/community 1.1.29, with @langchain/core 1.4.0 and
// @libsql/client 0.17.4), for h5mem reading libSQL files.
//
//   node libsql_build.js OUT.db DIMS
//
// Writes OUT.db (through @libsql/client, so with libSQL's F32_BLOB columns and
// its libsql_vector_idx DiskANN indexes) and OUT.json next to it (OUT.db's
// name with .json instead of .db): for each table the rows as LangChain stored
// them (rowid, content, metadata, the embedding as float32 values), the id
// deleted through the store, three similaritySearchWithScore queries with
// their embedding and the top 5 (id, score) LangChain returned, and the
// package versions. The store runs no DDL, so the tables are made here:
//   - vectors: the layout of the LangChain docs,
//     langchainjs docs/core_docs/docs/integrations/vectorstores/libsql.mdx
//     ("Setup the table and index"), with an id INTEGER PRIMARY KEY
//     AUTOINCREMENT and metadata TEXT;
//   - docs2: the layout of the package's integration test,
//     libs/langchain-community/src/vectorstores/tests/libsql.int.test.ts
//     (no id column, so the rowid is the id; metadata JSON), under another name.
// The index must be named idx_<table>_<column>: the store's search statement
// names it so. Embeddings come from a deterministic fake (no network). Every
// stored embedding is read back with plain SQL (hex) and must be the float32
// little-endian bytes of the recorded values, nothing more.
// Prints nothing on success; on any failure the error and exit 1.

const fs = require('fs');
const path = require('path');

// Anything a package prints on stdout goes to stderr, so stdout stays empty.
for (const k of ['log', 'info', 'debug']) console[k] = (...a) => console.error(...a);

function die(msg) {
  process.stderr.write(`libsql_build: ${msg}\n`);
  process.exit(1);
}

if (process.argv.length !== 4) die('usage: node libsql_build.js OUT.db DIMS');
const OUT = path.resolve(process.argv[2]);
const DIMS = Number(process.argv[3]);
if (!Number.isInteger(DIMS) || DIMS < 1 || DIMS > 65536) die(`DIMS must be an integer in 1..65536, not ${process.argv[3]}`);
// createClient takes a URL; keep the path free of what a URL would read differently.
if (/[?#%]/.test(OUT)) die(`OUT path must not contain ?, # or %: ${OUT}`);
const OUT_JSON = /\.db$/i.test(OUT) ? OUT.replace(/\.db$/i, '.json') : OUT + '.json';

const { createClient } = require('@libsql/client');
const { LibSQLVectorStore } = require('@langchain/community/vectorstores/libsql');
const { Document } = require('@langchain/core/documents');

// A package's version from its package.json, found where require would look
// (read with fs: the packages' exports maps do not all expose package.json).
function pkgVersion(name) {
  for (const dir of require.resolve.paths(name) || []) {
    const f = path.join(dir, name, 'package.json');
    if (fs.existsSync(f)) return JSON.parse(fs.readFileSync(f, 'utf8')).version;
  }
  throw new Error(`package ${name} not found`);
}

// Deterministic fake embeddings: FNV-1a over the text's UTF-8 bytes, then one
// more FNV step per component; 3-decimal values in [-1, 1), deliberately not
// normalised. -0 is made +0 (the store writes the vector as text, where -0
// becomes 0). vec32 gives the float32 values libSQL keeps.
class FakeEmbeddings {
  constructor(dims) { this.dims = dims; }
  vec(text) {
    let h = 2166136261 >>> 0;
    for (const ch of Buffer.from(text, 'utf8')) { h ^= ch; h = Math.imul(h, 16777619) >>> 0; }
    const v = [];
    for (let i = 0; i < this.dims; i++) {
      h ^= i + 1; h = Math.imul(h, 16777619) >>> 0;
      v.push(Math.round(((h % 2000) / 1000 - 1) * 1000) / 1000 + 0);
    }
    return v;
  }
  vec32(text) { return this.vec(text).map(Math.fround); }
  async embedDocuments(texts) { return texts.map((t) => this.vec(t)); }
  async embedQuery(text) { return this.vec(text); }
}

// langchainjs docs/core_docs/docs/integrations/vectorstores/libsql.mdx, with
// TABLE_NAME = vectors, EMBEDDING_COLUMN = embedding and DIMS for 1536 (its
// trailing comment kept, as a copy of the docs would have it).
const DDL_VECTORS = [
  `CREATE TABLE IF NOT EXISTS vectors (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    content TEXT,
    metadata TEXT,
    embedding F32_BLOB(${DIMS}) -- ${DIMS}-dimensional f32 vector
);`,
  'CREATE INDEX IF NOT EXISTS idx_vectors_embedding ON vectors(libsql_vector_idx(embedding));',
];
// libs/langchain-community/src/vectorstores/tests/libsql.int.test.ts, table
// vectors renamed docs2 and F32_BLOB(1024) made F32_BLOB(DIMS).
const DDL_DOCS2 = [
  `CREATE TABLE IF NOT EXISTS docs2 (
        content TEXT,
        metadata JSON,
        embedding F32_BLOB(${DIMS})
      );`,
  `CREATE INDEX IF NOT EXISTS idx_docs2_embedding
        ON docs2 (libsql_vector_idx(embedding));`,
];

const VECTORS_DOCS = [
  ['User prefers metric units', { source: 'chat', session: 's1', importance: 8 }],
  ['User works on h5mem, a SQLite extension', { source: 'chat', session: 's1', tags: ['project', 'sqlite'] }],
  ['HDF5 is the target container format', { source: 'notes', nested: { a: 1, b: [1, 2] } }],
  ['Meeting on Friday at 10:00', { source: 'calendar', ts: '2026-01-02T10:00:00Z' }],
  ['Coffee: black, no sugar', { source: 'chat', unicode: 'caf\u00e9 \u2615' }],
  ['Deadline for the migration is March', { source: 'email', priority: null }],
  ['Prefers concise answers', {}],
  ['Lives in Berlin', { source: 'profile', geo: { lat: 52.52, lon: 13.405 } }],
  ['Uses Debian 12 on CI', { source: 'chat', flag: true }],
  ['Quote test: it\'s "fine"', { source: 'edge', n: 1.5e-7 }],
];
const DOCS2_DOCS = [
  ['the quick brown fox', { label: '1' }],
  ['jumped over the lazy dog', { label: '2' }],
  ['hello world', { label: '1' }],
  ['a page with no metadata', {}],
];
const DELETE_INDEX = 5; // 'Deadline for the migration is March'
const QUERIES = ['User prefers metric units', 'Deadline for the migration is March', 'what does the user drink'];
const K = 5;

const sameJson = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function main() {
  fs.mkdirSync(path.dirname(OUT), { recursive: true });
  for (const f of [OUT, OUT + '-journal', OUT + '-wal', OUT + '-shm', OUT_JSON]) fs.rmSync(f, { force: true });

  const client = createClient({ url: 'file:' + OUT });
  try {
    await client.batch([...DDL_VECTORS, ...DDL_DOCS2], 'write');
    const embeddings = new FakeEmbeddings(DIMS);
    const toDocs = (list) => list.map(([pageContent, metadata]) => new Document({ pageContent, metadata }));

    // Defaults: table "vectors", column "embedding".
    const store = new LibSQLVectorStore(embeddings, { db: client });
    const store2 = new LibSQLVectorStore(embeddings, { db: client, table: 'docs2', column: 'embedding' });
    const ids = await store.addDocuments(toDocs(VECTORS_DOCS));
    const ids2 = await store2.addDocuments(toDocs(DOCS2_DOCS));
    if (ids.length !== VECTORS_DOCS.length || ids2.length !== DOCS2_DOCS.length) {
      throw new Error(`addDocuments returned ${ids.length} and ${ids2.length} ids`);
    }
    const deletedId = ids[DELETE_INDEX];
    await store.delete({ ids: [deletedId] });

    const queries = [];
    for (const text of QUERIES) {
      const hits = await store.similaritySearchWithScore(text, K);
      const results = hits.map(([doc, score]) => ({ id: Number(doc.id), score }));
      if (results.length !== K) throw new Error(`query ${JSON.stringify(text)}: ${results.length} results, not ${K}`);
      if (results.some((r) => String(r.id) === deletedId)) throw new Error(`query ${JSON.stringify(text)} returned the deleted row ${deletedId}`);
      queries.push({ table: 'vectors', text, k: K, embedding: embeddings.vec32(text), results });
    }

    // What each table should hold, and the check that it does, with plain SQL.
    const tables = {};
    const specs = [
      { name: 'vectors', layout: 'docs (libsql.mdx)', ddl: DDL_VECTORS, docs: VECTORS_DOCS, ids, deleted: [deletedId] },
      { name: 'docs2', layout: 'integration test (libsql.int.test.ts)', ddl: DDL_DOCS2, docs: DOCS2_DOCS, ids: ids2, deleted: [] },
    ];
    for (const s of specs) {
      const rows = [];
      s.docs.forEach(([content, metadata], i) => {
        if (s.deleted.includes(s.ids[i])) return;
        rows.push({ id: Number(s.ids[i]), content, metadata, embedding: embeddings.vec32(content) });
      });
      const rs = await client.execute(
        `SELECT rowid AS id, content, metadata, typeof(embedding) AS t, hex(embedding) AS h FROM ${s.name} ORDER BY rowid`);
      if (rs.rows.length !== rows.length) throw new Error(`${s.name}: ${rs.rows.length} rows stored, expected ${rows.length}`);
      rs.rows.forEach((got, i) => {
        const want = rows[i];
        const where = `${s.name} row ${want.id}`;
        if (Number(got.id) !== want.id) throw new Error(`${where}: stored rowid ${got.id}`);
        if (got.content !== want.content) throw new Error(`${where}: content ${JSON.stringify(got.content)}`);
        if (got.metadata !== JSON.stringify(want.metadata)) throw new Error(`${where}: metadata ${got.metadata}`);
        if (got.t !== 'blob') throw new Error(`${where}: embedding is ${got.t}, not a blob`);
        const blob = Buffer.from(got.h, 'hex');
        if (blob.length !== DIMS * 4) throw new Error(`${where}: embedding is ${blob.length} bytes, not ${DIMS}*4`);
        const dec = [];
        for (let j = 0; j < DIMS; j++) dec.push(blob.readFloatLE(4 * j));
        const exp = Buffer.alloc(DIMS * 4);
        want.embedding.forEach((x, j) => exp.writeFloatLE(x, 4 * j));
        if (!blob.equals(exp) || !dec.every((x, j) => x === want.embedding[j])) {
          throw new Error(`${where}: embedding decodes to [${dec}], expected [${want.embedding}]`);
        }
        if (!sameJson(JSON.parse(got.metadata), want.metadata)) throw new Error(`${where}: metadata does not round-trip`);
      });
      tables[s.name] = {
        layout: s.layout,
        ddl: s.ddl,
        index: `idx_${s.name}_embedding`,
        column: 'embedding',
        deleted_ids: s.deleted.map(Number),
        rows,
      };
    }

    const doc = {
      generator: 'test/interop/libsql_build.js',
      dims: DIMS,
      embedding_encoding: 'float32 little-endian, DIMS*4 bytes, no trailing type byte',
      score: 'cosine distance (1 - cos), as vector_distance_cos returns it; lower is closer',
      versions: {
        '@langchain/community': pkgVersion('@langchain/community'),
        '@langchain/core': pkgVersion('@langchain/core'),
        '@libsql/client': pkgVersion('@libsql/client'),
        libsql: pkgVersion('libsql'),
      },
      tables,
      deleted: { table: 'vectors', id: Number(deletedId) },
      queries,
    };
    fs.writeFileSync(OUT_JSON, JSON.stringify(doc, null, 1) + '\n');
  } finally {
    client.close();
  }
}

main().catch((e) => die(e && e.stack ? e.stack : String(e)));
