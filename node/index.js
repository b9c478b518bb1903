// h5mem for Node: load(db) loads the extension this package carries into a
// better-sqlite3 Database, or into a node:sqlite DatabaseSync opened with
// { allowExtension: true } (Node 22.5 and later).
'use strict';
const path = require('node:path');

function getLoadablePath() {
  return path.join(__dirname, 'h5mem.so');
}

function load(db) {
  if (!db || typeof db.loadExtension !== 'function') {
    throw new TypeError('h5mem.load: expected a better-sqlite3 Database or a node:sqlite DatabaseSync');
  }
  if (typeof db.enableLoadExtension === 'function') {
    // node:sqlite: loading is allowed only for this call
    try {
      db.enableLoadExtension(true);
    } catch (e) {
      throw new Error('h5mem.load: open the DatabaseSync with { allowExtension: true } (' + e.message + ')');
    }
    try {
      db.loadExtension(getLoadablePath());
    } finally {
      db.enableLoadExtension(false);
    }
    return;
  }
  db.loadExtension(getLoadablePath());
}

module.exports = { load, getLoadablePath };
