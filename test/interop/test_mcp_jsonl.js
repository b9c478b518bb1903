// The MCP memory server's JSONL as that server writes and reads it (issue
// 23), with the real @modelcontextprotocol/server-memory (npm) as the
// oracle:
//
// 1. The same graph tool calls, odd ones included (relations naming no
//    entity, entities named "", duplicate names, lone surrogates and U+0000
//    in strings), sent to the reference and to h5mem-mcp through the MCP
//    SDK's client give the same results, and h5mem-mcp's store exported
//    (kg_export_jsonl) is byte for byte the file the reference wrote.
// 2. kg_import_jsonl of each file the reference wrote along the way, then
//    kg_export_jsonl, gives back the same bytes; h5mem-mcp started on it
//    with MEMORY_FILE_PATH reads back the graph the reference reads.
// 3. Hand-made files the reference reads (CRLF, blank and white-space
//    lines, lines of other kinds, duplicate keys, escapes it would not
//    write, ill-formed UTF-8, members it does not keep): the export equals
//    what the reference writes after reading the file, and the import's
//    report says what was left out or adjusted.
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {betterSqlite3, extPath, mcpSdk} = require('./nodeutil');

const {connect, server, reference} = mcpSdk();
const Database = betterSqlite3();

let checks = 0;
const check = (cond, what) => { assert.ok(cond, what); checks++; };
const show = (b) => JSON.stringify(b.toString('latin1')).slice(0, 400);

// kg_import_jsonl of the bytes into a new store (its report), and
// kg_export_jsonl of the store as bytes
function sqlImport(store, bytes) {
  const db = new Database(':memory:');
  db.loadExtension(extPath);
  db.exec(`CREATE VIRTUAL TABLE m USING h5mem(path='${store}', dim=4)`);
  const rep = JSON.parse(db.prepare("SELECT kg_import_jsonl('m', CAST(? AS TEXT)) AS r").get(bytes).r);
  const out = db.prepare("SELECT CAST(kg_export_jsonl('m') AS BLOB) AS b").get().b;
  db.close();
  return {rep, out: Buffer.from(out)};
}
function sqlExport(store) {
  const db = new Database(':memory:');
  db.loadExtension(extPath);
  db.exec(`CREATE VIRTUAL TABLE m USING h5mem(path='${store}')`);
  const out = db.prepare("SELECT CAST(kg_export_jsonl('m') AS BLOB) AS b").get().b;
  db.close();
  return Buffer.from(out);
}

// the reference started on a file: its read_graph, and the file it writes
// back after reading it (delete_relations of nothing saves the graph)
async function refReads(file) {
  const c = await connect(process.execPath, [reference], {MEMORY_FILE_PATH: file});
  try {
    const g = await c.callTool({name: 'read_graph', arguments: {}});
    const d = await c.callTool({name: 'delete_relations', arguments: {relations: []}});
    assert.ok(!g.isError && !d.isError, `the reference reads ${file}: ${g.isError && g.content[0].text}`);
    return {graph: g.structuredContent, bytes: fs.readFileSync(file)};
  } finally {
    await c.close();
  }
}

const calls = [
  ['create_entities', {entities: [
    {name: '', entityType: 'nameless', observations: ['an entity named ""']},
    {name: 'dup', entityType: 'first', observations: ['one', 'one', 'lone \ud800 high', 'nul \u0000 inside']},
    {name: 'dup', entityType: 'second', observations: ['two']},  // a repeat in one call: the reference keeps both
    {name: 'sur\udc00', entityType: 'x\ud83d', observations: ['😀 \ud83d\ude00 \u2028 \u007f \u0001 "q" \\']},
    {name: 'Zoë', entityType: 'person', observations: []}]}],
  ['create_relations', {relations: [
    {from: 'dup', to: 'ghost', relationType: 'haunts'},        // 'ghost' names no entity
    {from: 'ghost', to: 'ghost2', relationType: 'knows'},      // nor does either end here
    {from: '', to: 'dup', relationType: 'r\u0000'},
    {from: 'Zoë', to: 'sur\udc00', relationType: 'likes'},
    {from: 'Zoë', to: 'sur\udc00', relationType: 'likes'}]}],  // a repeat in one call: kept twice
  ['read_graph', {}],
  ['search_nodes', {query: 'ghost'}],
  ['search_nodes', {query: ''}],
  ['search_nodes', {query: '\ud800'}],
  ['search_nodes', {query: 'nul \u0000'}],
  ['search_nodes', {query: 'ONE'}],
  ['open_nodes', {names: ['ghost', 'dup', '']}],
  ['open_nodes', {names: ['sur\udc00']}],
  ['add_observations', {observations: [{entityName: 'dup', contents: ['one', 'three \ud800']},
                                       {entityName: '', contents: ['\u0000']}]}],
  ['add_observations', {observations: [{entityName: 'ghost', contents: ['x']}]}],  // no entity yet
  ['create_entities', {entities: [{name: 'ghost', entityType: 'spirit', observations: ['boo']}]}],
  ['open_nodes', {names: ['ghost']}],
  ['delete_observations', {deletions: [{entityName: 'dup', observations: ['lone \ud800 high', 'one']}]}],
  ['delete_relations', {relations: [{from: 'ghost', to: 'ghost2', relationType: 'knows'}]}],
  ['create_relations', {relations: [{from: 'ghost', to: 'ghost2', relationType: 'knows'},
                                    {from: 'ghost3', to: 'ghost3', relationType: 'self'}]}],
  ['delete_entities', {entityNames: ['ghost3']}],  // a name only relations use: they go
  ['read_graph', {}],
  ['delete_entities', {entityNames: ['dup']}],       // both of the name, and their relations
  ['read_graph', {}],
  ['search_nodes', {query: 'o'}],
];

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h5mem_mcpj_'));
  const refFile = path.join(dir, 'memory.jsonl'), ourStore = path.join(dir, 'memory.h5');
  const ours = await connect(server, ['--store', ourStore], {});
  const ref = await connect(process.execPath, [reference], {MEMORY_FILE_PATH: refFile});
  const written = [];  // the files the reference wrote, call by call
  try {
    for (const [name, args] of calls) {
      const [a, b] = [await ours.callTool({name, arguments: args}), await ref.callTool({name, arguments: args})];
      const what = `${name} ${JSON.stringify(args).slice(0, 100)}`;
      check(!!a.isError === !!b.isError, `${what}: isError ${a.isError} vs ${b.isError}: ${a.content[0].text}`);
      if (b.isError) {
        assert.equal(a.content[0].text, b.content[0].text, what);
      } else {
        assert.deepEqual(a.structuredContent, b.structuredContent, what);
        assert.deepEqual(a.content, b.content, what);
      }
      checks += 1;
      if (fs.existsSync(refFile)) written.push(fs.readFileSync(refFile));
    }
  } finally {
    await ours.close();
    await ref.close();
  }
  console.log(`ok   the same ${calls.length} odd calls give the same results on both servers`);
  const final = fs.readFileSync(refFile);
  const mine = sqlExport(ourStore);
  assert.ok(mine.equals(final), `h5mem-mcp's store exported:\n${show(mine)}\nthe reference's file:\n${show(final)}`);
  checks++;
  console.log('ok   the store exported is byte for byte the file the reference wrote');

  // every file the reference wrote: imported and exported, the same bytes
  for (let i = 0; i < written.length; i++) {
    const {rep, out} = sqlImport(path.join(dir, `w${i}.h5`), written[i]);
    assert.ok(out.equals(written[i]), `file ${i}: export of the import differs:\n${show(out)}\n${show(written[i])}`);
    check(rep.adjusted.lines_ignored === 0 && rep.adjusted.invalid_utf8 === 0 && rep.adjusted.members_missing === 0,
          `file ${i}: nothing adjusted: ${JSON.stringify(rep)}`);
  }
  const {rep: first} = sqlImport(path.join(dir, 'first.h5'), written[1]);
  check(first.dangling_relations === 2 && first.placeholders === 2 && first.relations === 5,
        `dangling relations kept: ${JSON.stringify(first)}`);
  check(first.adjusted.strings_kept_in_meta === 5, `strings kept in meta: ${JSON.stringify(first)}`);
  console.log(`ok   ${written.length} files the reference wrote: import then export gives the same bytes`);

  // h5mem-mcp started on the reference's file reads back what the reference reads
  for (const i of [1, written.length - 1]) {
    const file = path.join(dir, `in${i}.jsonl`);
    fs.writeFileSync(file, written[i]);
    const want = (await refReads(file)).graph;
    const c = await connect(server, ['--store', path.join(dir, `in${i}.h5`)], {MEMORY_FILE_PATH: file});
    const got = (await c.callTool({name: 'read_graph', arguments: {}})).structuredContent;
    const s1 = await c.callTool({name: 'search_nodes', arguments: {query: 'ghost'}});
    await c.close();
    assert.deepEqual(got, want, `file ${i} imported by h5mem-mcp`);
    check(!s1.isError, 'search after import');
  }
  console.log('ok   h5mem-mcp imports them (MEMORY_FILE_PATH) and reads back the same graph');

  // the search image (mcp/mcp_image.h) of each graph the reference wrote
  // (placeholders, names repeated, "" and JavaScript strings kept in meta):
  // written as h5mem-mcp ends, and answering search_nodes as the reference
  // does when the server starts again (H5MEM_MCP_SEARCH=image: every search
  // from the image)
  const queries = ['ghost', '', '\ud800', 'nul \u0000', 'ONE', 'o', 'dup', 'sur\udc00', 'zo', 'Zoë', '"q"', '😀',
                   '\u2028', 'boo', 'x\ud83d', 'nameless', '\u0001'];
  for (let i = 0; i < written.length; i++) {
    const file = path.join(dir, `im${i}.jsonl`), store = path.join(dir, `im${i}.h5`);
    fs.writeFileSync(file, written[i]);
    let c = await connect(server, ['--store', store], {MEMORY_FILE_PATH: file});
    await c.close();
    c = await connect(server, ['--store', store, '--verbose'], {H5MEM_MCP_SEARCH: 'image'});
    const r = await connect(process.execPath, [reference], {MEMORY_FILE_PATH: file});
    for (const query of queries) {
      const [a, b] = [await c.callTool({name: 'search_nodes', arguments: {query}}),
                      await r.callTool({name: 'search_nodes', arguments: {query}})];
      assert.deepEqual(a, b, `file ${i}: search_nodes ${JSON.stringify(query)} from the image`);
      checks++;
    }
    await c.close();
    await r.close();
    await c.stderrEnd;
    check(/search image: \d+ entities/.test(c.stderrText), `file ${i}: the image was read: ${c.stderrText.slice(0, 200)}`);
  }
  console.log(`ok   the search images of the ${written.length} graphs answer search_nodes as the reference`);

  // hand-made files: the export is what the reference writes after reading them
  const E = (o) => JSON.stringify(o);
  const odd = {
    crlf_blank: [E({type: 'entity', name: 'a', entityType: 't', observations: ['x']}) + '\r', '', '   ', '\t\r',
                 '\u00a0\u2003\ufeff', E({type: 'relation', from: 'a', to: 'a', relationType: 'self'}) + '\r', ''].join('\n'),
    relations_first: [E({type: 'relation', from: 'b', to: 'a', relationType: 'r'}),
                      E({type: 'entity', name: 'a', entityType: 't', observations: []}),
                      E({type: 'relation', from: 'a', to: 'nobody', relationType: 'r'}),
                      E({type: 'entity', name: 'b', entityType: 't', observations: ['o']})].join('\n'),
    other_lines: ['{"type":"note","text":"kept nowhere"}', '[1,2]', '5', '"entity"', '{}', 'true',
                  E({type: 'entity', name: 'a', entityType: 't', observations: []}),
                  '{"type":"Entity","name":"case matters"}'].join('\n'),
    dup_keys_escapes: ['{"type":"entity","name":"first","name":"last","entityType":"\\u0074\\/","observations":["\\ud83d\\ude00","\\u00e9\\u0000\\udbff"],"id":7}',
                       '{"type":"relation","from":"last","to":"last","relationType":"x","relationType":"y","weight":2}'].join('\n'),
    // a stray continuation byte, a cut sequence, overlong, a surrogate, past U+10FFFF, 0xFF
    invalid_utf8: Buffer.concat([Buffer.from('{"type":"entity","name":"a'), Buffer.from([0x80]),
                                 Buffer.from('b","entityType":"'),
                                 Buffer.from([0xe2, 0x82, 0x78, 0xc0, 0xaf, 0xed, 0xa0, 0x80, 0xf5, 0xf4, 0x90, 0x80, 0x80,
                                              0xf0, 0x9f, 0x98]),
                                 Buffer.from('","observations":["'), Buffer.from([0xff]), Buffer.from('"]}')]),
    empty: '',
    blank_only: '\n\n  \n',
    duplicates: [E({type: 'entity', name: 'd', entityType: 't', observations: ['o', 'o']}),
                 E({type: 'entity', name: 'd', entityType: 't', observations: ['o']}),
                 E({type: 'relation', from: 'd', to: 'd', relationType: 'r'}),
                 E({type: 'relation', from: 'd', to: 'd', relationType: 'r'})].join('\n'),
  };
  const wantReport = {
    crlf_blank: (r) => r.lines === 2 && r.entities === 1 && r.relations === 1,
    relations_first: (r) => r.relations === 2 && r.dangling_relations === 1 && r.placeholders === 1,
    other_lines: (r) => r.adjusted.lines_ignored === 7 && E(r.adjusted.ignored_lines) === '[1,2,3,4,5,6,8]',
    dup_keys_escapes: (r) => r.entities === 1 && r.relations === 1 && r.adjusted.strings_kept_in_meta === 1,
    invalid_utf8: (r) => r.adjusted.invalid_utf8 === 14 && r.entities === 1,
    empty: (r) => r.lines === 0,
    blank_only: (r) => r.lines === 0,
    duplicates: (r) => r.entities === 2 && r.relations === 2 && r.observations === 3,
  };
  for (const [name, text] of Object.entries(odd)) {
    const file = path.join(dir, `${name}.jsonl`);
    const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
    fs.writeFileSync(file, bytes);
    const {rep, out} = sqlImport(path.join(dir, `${name}.h5`), bytes);
    const want = (await refReads(file)).bytes;
    assert.ok(out.equals(want), `${name}: our export:\n${show(out)}\nthe reference writes:\n${show(want)}`);
    check(wantReport[name](rep), `${name}: report ${E(rep)}`);
    // a second import of the same file into the same store adds nothing
    const db = new Database(':memory:');
    db.loadExtension(extPath);
    db.exec(`CREATE VIRTUAL TABLE m USING h5mem(path='${path.join(dir, `${name}.h5`)}')`);
    const again = JSON.parse(db.prepare("SELECT kg_import_jsonl('m', CAST(? AS TEXT)) AS r").get(bytes).r);
    const out2 = Buffer.from(db.prepare("SELECT CAST(kg_export_jsonl('m') AS BLOB) AS b").get().b);
    db.close();
    check(again.entities === 0 && again.relations === 0 && again.observations === 0 && again.placeholders === 0 &&
          out2.equals(out), `${name}: a second import adds nothing: ${E(again)}`);
  }
  console.log(`ok   ${Object.keys(odd).length} hand-made files: the export is what the reference writes after reading them`);

  // members the reference keeps as they are but never writes itself (no
  // entityType, no observations, null): imported, counted as adjusted, and
  // exported as "" and [] (what its tools' schemas require)
  const {rep: miss, out: missOut} = sqlImport(path.join(dir, 'missing.h5'), Buffer.from(
    [E({type: 'entity', name: 'a'}), E({type: 'entity', name: 'b', entityType: null, observations: null}),
     E({type: 'relation', from: 'a', to: 'b'})].join('\n')));
  check(miss.adjusted.members_missing === 5 && miss.entities === 2 && miss.relations === 1, `missing: ${E(miss)}`);
  assert.equal(missOut.toString(), [E({type: 'entity', name: 'a', entityType: '', observations: []}),
                                    E({type: 'entity', name: 'b', entityType: '', observations: []}),
                                    E({type: 'relation', from: 'a', to: 'b', relationType: ''})].join('\n'));
  checks++;
  // what the reference cannot read either is an error naming the line, and imports nothing
  for (const [bad, msg] of [['{"type":"entity","name":"a"}\n{"type":"entity",', /line 2: malformed JSON/],
                            ['\ufeff{"type":"entity","name":"a"}', /line 1: malformed JSON/],
                            ['{"type":"entity","name":7}', /line 1: "name" must be a string/],
                            ['{"type":"entity","name":"a","observations":"x"}', /observations/],
                            ['{"type":"entity","name":"a","observations":[1]}', /observations/],
                            ['{"type":"relation","from":"a"}', /line 1: "to" must be a string/]]) {
    const db = new Database(':memory:');
    db.loadExtension(extPath);
    db.exec(`CREATE VIRTUAL TABLE m USING h5mem(path='${path.join(dir, 'bad.h5')}', dim=4)`);
    assert.throws(() => db.prepare("SELECT kg_import_jsonl('m', ?)").get(bad), msg, bad);
    check(db.prepare('SELECT count(*) AS n FROM m_entities').get().n === 0, 'nothing imported');
    db.close();
  }
  fs.rmSync(dir, {recursive: true, force: true});
  console.log(`${checks} checks passed`);
}

main().catch((e) => { console.log('FAIL:', e && e.stack ? e.stack : e); process.exit(1); });
