// What the Node tests share: better-sqlite3 (npm), or a clear failure
// saying how to install it, and the freshly built extension's path.
'use strict';
const path = require('node:path');

function betterSqlite3() {
  try {
    return require('better-sqlite3');
  } catch (e) {
    const dir = path.join(process.env.H5MEM_SRCDIR || path.join(__dirname, '..', '..'), 'test', 'interop');
    console.log(`FAIL: better-sqlite3 is not installed; run: npm ci --prefix ${dir}`);
    process.exit(1);
  }
}

const extPath = process.env.H5MEM_EXT || path.join(__dirname, '..', '..', 'h5mem');

module.exports = {betterSqlite3, extPath};
