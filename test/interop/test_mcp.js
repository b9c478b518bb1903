// h5mem-mcp (issue 23) through the real MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, npm), against the reference memory server
// (@modelcontextprotocol/server-memory, npm) as the oracle: the same tools
// listed, and the same sequence of graph tool calls sent to both servers
// gives the same results (content, structuredContent, isError).
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const {betterSqlite3, extPath, mcpSdk} = require('./nodeutil');

const {connect, server, reference, types: {ResourceUpdatedNotificationSchema}} = mcpSdk();

let checks = 0;
const check = (cond, what) => { assert.ok(cond, what); checks++; };

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h5mem_mcp_'));
  // h5mem-mcp four times: search_nodes as it comes (field by field, then
  // the haystacks scanned, then the trigram index, as the background thread
  // makes them), and always each of those ways
  const ours = await connect(server, ['--store', path.join(dir, 'memory.h5')], {});
  const others = [];
  for (const mode of ['fields', 'scan', 'index'])
    others.push(await connect(server, ['--store', path.join(dir, `${mode}.h5`)], {H5MEM_MCP_SEARCH: mode}));
  const ref = await connect(process.execPath, [reference], {MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl')});
  try {
    check(ours.getServerVersion().name === 'h5mem-mcp', 'server name');
    check(ours.getServerCapabilities().tools, 'tools capability');
    const [lo, lr] = [await ours.listTools(), await ref.listTools()];
    assert.deepEqual(lo.tools.slice(0, lr.tools.length), lr.tools, 'the reference\'s nine tools, unchanged');
    assert.deepEqual(lo.tools.slice(lr.tools.length).map((t) => t.name), ['remember', 'recall', 'forget', 'memory_stats']);
    checks += 2;

    const calls = [
      ['read_graph', {}],
      ['search_nodes', {query: 'abc'}],  // an empty graph (its index has no trigrams)
      ['create_entities', {entities: [
        {name: 'Alice', entityType: 'person', observations: ['Likes green tea', 'Runs marathons']},
        {name: 'Acme', entityType: 'company', observations: ['Makes widgets']},
        {name: 'Bob', entityType: 'person', observations: []}]}],
      ['create_entities', {entities: [  // existing names skipped; a repeat within the call is kept
        {name: 'Alice', entityType: 'robot', observations: ['x']},
        {name: 'Chamonix', entityType: 'place', observations: ['In the Alps', 'In the Alps']},
        {name: 'Dora', entityType: 'person', observations: ['Ünïcode ✓ "quoted"\n\ttabbed']},
        {name: 'ÉCOLE ΟΔΟΣ', entityType: 'PLACE', observations: ['İstanbul ǄA ẞ 𐐀 Ꭰ ΑΣ\'Α']}]}],
      ['create_relations', {relations: [
        {from: 'Alice', to: 'Acme', relationType: 'works_at'},
        {from: 'Bob', to: 'Alice', relationType: 'knows'},
        {from: 'Alice', to: 'Chamonix', relationType: 'trains_in'}]}],
      ['create_relations', {relations: [{from: 'Alice', to: 'Acme', relationType: 'works_at'},
                                        {from: 'Acme', to: 'Bob', relationType: 'employs'}]}],
      ['add_observations', {observations: [
        {entityName: 'Bob', contents: ['Plays chess', 'Plays chess']},
        {entityName: 'Alice', contents: ['Likes green tea', 'Has a dog']}]}],
      ['add_observations', {observations: [{entityName: 'Alice', contents: ['ok']},
                                           {entityName: 'Zed', contents: ['x']}]}],  // all or nothing
      ['search_nodes', {query: 'TEA'}],
      ['search_nodes', {query: 'person'}],
      ['search_nodes', {query: ''}],
      ['search_nodes', {query: 'nothing matches this'}],
      ['search_nodes', {query: 'Al'}],          // shorter than a trigram: a scan
      ['search_nodes', {query: 'ICE'}],         // one trigram
      ['search_nodes', {query: 'n the al'}],    // across words
      ['search_nodes', {query: 'zzq'}],         // a trigram nobody has
      ['search_nodes', {query: '"quoted"'}],
      ['search_nodes', {query: 'école οδος'}],  // toLowerCase beyond ASCII: É, final sigma
      ['search_nodes', {query: 'οδοσ'}],        // (no: the final sigma is ς)
      ['search_nodes', {query: 'i\u0307stanbul ǆa ß 𐐨 ꭰ ασ\'α'}],
      ['search_nodes', {query: 'ÜNÏCODE'}],
      ['open_nodes', {names: ['Bob', 'Nobody']}],
      ['delete_observations', {deletions: [{entityName: 'Alice', observations: ['Runs marathons']},
                                           {entityName: 'Nobody', observations: ['x']}]}],
      ['delete_relations', {relations: [{from: 'Bob', to: 'Alice', relationType: 'knows'}]}],
      ['read_graph', {}],
      ['delete_entities', {entityNames: ['Acme', 'Nobody']}],
      ['read_graph', {}],
      ['create_entities', {entities: [{name: 'Eve', entityType: 'person'}]}],  // invalid: no observations
      ['search_nodes', {query: 7}],
      ['no_such_tool', {}],
    ];
    for (const [name, args] of calls) {
      const [a, b] = [await ours.callTool({name, arguments: args}), await ref.callTool({name, arguments: args})];
      const what = `${name} ${JSON.stringify(args).slice(0, 80)}`;
      for (const c of others) assert.deepEqual(await c.callTool({name, arguments: args}), a, `${what}: scan and index`);
      check(!!a.isError === !!b.isError, `${what}: isError ${a.isError} vs ${b.isError}`);
      if (b.isError) {
        // the same failure; the reference's zod message is its own
        if (/^Entity with/.test(b.content[0].text)) assert.equal(a.content[0].text, b.content[0].text, what);
        else check(/^MCP error -32602/.test(a.content[0].text), `${what}: ${a.content[0].text}`);
        continue;
      }
      assert.deepEqual(a.structuredContent, b.structuredContent, what);
      assert.deepEqual(a.content, b.content, what);
      checks += 2;
    }
    console.log(`ok   the same ${calls.length} calls give the same results on both servers`);

    // the knowledge-graph resource, as the reference serves it, and the
    // notifications a subscriber gets when a tool changes the graph
    const uri = 'memory://knowledge-graph';
    assert.deepEqual(ours.getServerCapabilities(), ref.getServerCapabilities(), 'capabilities');
    assert.deepEqual(await ours.listResources(), await ref.listResources(), 'resources/list');
    assert.deepEqual(await ours.listResourceTemplates(), await ref.listResourceTemplates(), 'resources/templates/list');
    assert.deepEqual(await ours.readResource({uri}), await ref.readResource({uri}), 'resources/read');
    const [eo, er] = await Promise.all([ours, ref].map((c) => c.readResource({uri: 'memory://other'}).catch((e) => e.message)));
    assert.equal(eo, er, 'an unknown resource');
    checks += 5;
    const seen = {ours: 0, ref: 0};
    ours.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { assert.equal(n.params.uri, uri); seen.ours++; });
    ref.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { assert.equal(n.params.uri, uri); seen.ref++; });
    for (const c of [ours, ref]) await c.subscribeResource({uri});
    const changes = [
      ['create_entities', {entities: [{name: 'Fay', entityType: 'person', observations: ['new']}]}],  // notified
      ['add_observations', {observations: [{entityName: 'Nobody', contents: ['x']}]}],                // fails: not
      ['read_graph', {}],                                                                              // reads: not
      ['delete_relations', {relations: []}],                                                           // notified
    ];
    for (const [name, args] of changes)
      for (const c of [ours, ref]) await c.callTool({name, arguments: args});
    check(seen.ours === 2 && seen.ref === 2, `notifications: ${JSON.stringify(seen)}`);
    for (const c of [ours, ref]) await c.unsubscribeResource({uri});
    for (const c of [ours, ref]) await c.callTool({name: 'delete_relations', arguments: {relations: []}});
    check(seen.ours === 2 && seen.ref === 2, `none after unsubscribing: ${JSON.stringify(seen)}`);
    assert.deepEqual(await ours.readResource({uri}), await ref.readResource({uri}), 'resources/read after changes');
    await ours.subscribeResource({uri});
    await ours.callTool({name: 'remember', arguments: {text: 'Fay paints murals in the old harbour', entities: ['Fay']}});
    check(seen.ours === 3, 'remember changes the graph: notified');
    await ours.unsubscribeResource({uri});
    console.log('ok   the knowledge-graph resource and its notifications, as the reference');

    // the memory tools
    const call = async (name, args) => {
      const r = await ours.callTool({name, arguments: args});
      assert.ok(!r.isError, `${name}: ${r.isError && r.content[0].text}`);
      assert.deepEqual(JSON.parse(r.content[0].text), r.structuredContent, `${name}: text and structured content`);
      checks += 2;
      return r.structuredContent;
    };
    const r1 = await call('remember', {text: 'Alice hiked across the Alps with Bob in June', session: 's1',
                                       source: 'user', entities: ['Alice', 'Bob', 'Zoe']});
    check(r1.action === 'inserted' && r1.id > 0, `remember: ${JSON.stringify(r1)}`);
    assert.deepEqual([r1.mentions, r1.unknown_entities], [['Alice', 'Bob'], ['Zoe']]);
    const r2 = await call('remember', {text: 'thanks!'});
    check(r2.action === 'skipped' && r2.id === null, 'a trivial text is skipped');
    await call('remember', {text: 'Bob prefers coffee over tea', session: 's2'});
    const hits = (await call('recall', {query: 'who hiked in June', k: 3})).memories;
    check(hits.length >= 1 && hits[0].id === r1.id && hits[0].session === 's1', `recall: ${JSON.stringify(hits)}`);
    const s2 = (await call('recall', {query: 'tea', session: 's2'})).memories;
    check(s2.length === 1 && s2[0].text === 'Bob prefers coffee over tea', `recall in a session: ${JSON.stringify(s2)}`);
    const byEnt = (await call('recall', {query: 'june', entities: ['Alice']})).memories.map((x) => x.id);
    check(byEnt.includes(r1.id), `recall by entity: ${byEnt}`);
    const none = (await call('recall', {query: 'alps', entities: ['Nobody']})).memories;
    check(none.length === 0, 'an unknown entity matches nothing');
    const st = await call('memory_stats', {});
    check(st.entities >= 3 && st.memories >= 6 && st.mentions >= 6, `memory_stats: ${JSON.stringify(st)}`);
    const f = await call('forget', {ids: [r1.id, 999999]});
    check(f.forgotten === 1, 'forget');
    check((await call('recall', {query: 'who hiked in June', k: 5})).memories.every((x) => x.id !== r1.id), 'forgotten');
    // a memory remember links to an entity is one of its observations; deleting the
    // observation unlinks it, and the memory stays
    const r3 = await call('remember', {text: 'Alice keeps bees on the roof', entities: ['Alice']});
    const obsOf = async () => (await call('open_nodes', {names: ['Alice']})).entities[0].observations;
    check((await obsOf()).includes('Alice keeps bees on the roof'), 'a remembered memory is an observation');
    const del = await ours.callTool({name: 'delete_observations', arguments: {deletions: [
      {entityName: 'Alice', observations: ['Alice keeps bees on the roof']}]}});
    check(!del.isError && del.content[0].text === 'Observations deleted successfully', 'delete_observations');
    check(!(await obsOf()).includes('Alice keeps bees on the roof'), 'deleting the observation unlinks it');
    check((await call('recall', {query: 'bees roof', k: 1})).memories[0].id === r3.id, 'the memory stays');
    const bad = await ours.callTool({name: 'recall', arguments: {k: 3}});
    check(bad.isError && /query/.test(bad.content[0].text), 'recall without a query is a tool error');
  } finally {
    await ours.close();
    await ref.close();
    for (const c of others) await c.close();
  }

  // a new store imports the reference's file (MEMORY_FILE_PATH, as the
  // reference names it) and reads back the same graph; a restart keeps it
  const refGraph = async (file) => {
    const c = await connect(process.execPath, [reference], {MEMORY_FILE_PATH: file});
    const g = (await c.callTool({name: 'read_graph', arguments: {}})).structuredContent;
    await c.close();
    return g;
  };
  const want = await refGraph(path.join(dir, 'memory.jsonl'));
  for (let round = 0; round < 2; round++) {
    const c = await connect(server, ['--store', path.join(dir, 'imported.h5')],
                            {MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl')});
    const got = (await c.callTool({name: 'read_graph', arguments: {}})).structuredContent;
    await c.close();
    assert.deepEqual(got, want, round ? 'kept across a restart' : 'imported');
    checks++;
  }

  // the search image (mcp/mcp_image.h): written beside the store
  // (<store>-mcp) as the server ends, mapped at the next start; with H5MEM_MCP_SEARCH=image it
  // answers every search_nodes (else only until the graph is indexed): the
  // same answers as the reference's on the same graph
  const store = path.join(dir, 'imported.h5');
  const queries = ['TEA', 'ÜNÏCODE', 'person', '', 'nothing matches this', 'Al', 'a', 'ICE', 'n the al', 'zzq',
                   '"quoted"', 'école οδος', 'οδοσ', 'i\u0307stanbul ǆa ß 𐐨 ꭰ ασ\'α', 'in the alps', 'PLAYS', 'fay',
                   '\u0001', 'ay'];
  const searchBoth = async (c, r, what) => {
    for (const query of queries) {
      const [a, b] = [await c.callTool({name: 'search_nodes', arguments: {query}}),
                      await r.callTool({name: 'search_nodes', arguments: {query}})];
      assert.deepEqual(a, b, `${what}: search_nodes ${JSON.stringify(query)}`);
      checks++;
    }
  };
  const refNow = await connect(process.execPath, [reference], {MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl')});
  check(fs.statSync(`${store}-mcp`).size > 128, 'the image beside the store');
  let c = await connect(server, ['--store', store, '--verbose'], {H5MEM_MCP_SEARCH: 'image'});
  await searchBoth(c, refNow, 'from the image');
  await c.close();
  await c.stderrEnd;
  check(/search image: \d+ entities/.test(c.stderrText), `the image was read: ${c.stderrText.slice(0, 300)}`);
  check((c.stderrText.match(/the image cannot answer/g) || []).length === 1, 'only the query holding 0x01 went to the graph');
  // a store changed by another program after the image was saved: the
  // image is stale and not used (a new entity is found), and the server
  // saves a new one as it ends
  const Database = betterSqlite3();
  const db = new Database(':memory:');
  db.loadExtension(extPath);
  db.exec(`CREATE VIRTUAL TABLE temp.m USING h5mem(path='${store}')`);
  db.prepare("SELECT kg_entity('m', 'Fayette', 'town')").get();
  db.exec("INSERT INTO m(m) VALUES('checkpoint')");
  db.close();
  await refNow.callTool({name: 'create_entities', arguments: {entities: [{name: 'Fayette', entityType: 'town', observations: []}]}});
  c = await connect(server, ['--store', store, '--verbose'], {H5MEM_MCP_SEARCH: 'image'});
  await searchBoth(c, refNow, 'after a change by another program');
  await c.close();
  await c.stderrEnd;
  check(/no search image [(].*[)]: made before the store last changed/.test(c.stderrText), `stale: ${c.stderrText.slice(0, 300)}`);
  check(/search image written/.test(c.stderrText), `a new image saved: ${c.stderrText.slice(-500)}`);
  // ... which the next start uses; a write through the server sets it aside at once
  c = await connect(server, ['--store', store, '--verbose'], {H5MEM_MCP_SEARCH: 'image'});
  await searchBoth(c, refNow, 'from the new image');
  const add = {entities: [{name: 'Fabian', entityType: 'person', observations: ['says hay']}]};
  await c.callTool({name: 'create_entities', arguments: add});
  await refNow.callTool({name: 'create_entities', arguments: add});
  await searchBoth(c, refNow, 'after a write');
  await c.close();
  await c.stderrEnd;
  check(/search image: \d+ entities/.test(c.stderrText), 'the new image was read');
  // a damaged image: a byte of its sections changed (its block's checksum
  // fails at the first search that reads it: the graph answers), its
  // header changed, the file cut short; the answers stay the reference's
  const img = fs.readFileSync(`${store}-mcp`);
  const damaged = [
    [(b) => { b[200] ^= 0x20; return b; }, /the image cannot answer/],
    [(b) => { b[b.length - 3] ^= 1; return b; }, /no search image [(].*[)]: its header's checksum is wrong/],
    [(b) => b.subarray(0, b.length - 9), /no search image [(].*[)]: its sections do not fit its length/],
    [() => Buffer.from('not an image'), /no search image [(].*[)]: not a search image/],
  ];
  for (const [spoil, said] of damaged) {
    fs.writeFileSync(`${store}-mcp`, spoil(Buffer.from(img)));
    c = await connect(server, ['--store', store, '--verbose'], {H5MEM_MCP_SEARCH: 'image'});
    await searchBoth(c, refNow, `a damaged image (${said})`);
    await c.close();
    await c.stderrEnd;
    check(said.test(c.stderrText), `${said}: ${c.stderrText.slice(0, 300)}`);
    check(/search image written/.test(c.stderrText), `a damaged image is written again: ${c.stderrText.slice(-300)}`);
  }
  await refNow.close();
  fs.rmSync(dir, {recursive: true, force: true});
  console.log(`${checks} checks passed`);
}

main().catch((e) => { console.log('FAIL:', e && e.stack ? e.stack : e); process.exit(1); });
