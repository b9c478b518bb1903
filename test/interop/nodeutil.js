// What the Node tests share: better-sqlite3 (npm), or a clear failure
// saying how to install it, the freshly built extension's path, and the
// MCP SDK's client (mcpSdk).
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

// The MCP tests' side (test_mcp*.js): the SDK's client (npm), or a clear
// failure saying how to install it; h5mem-mcp (the build's) and the
// reference server; connect(command, args, env) starts one of them through
// the SDK's stdio transport.
function mcpSdk() {
  let sdk;
  try {
    sdk = {
      Client: require('@modelcontextprotocol/sdk/client/index.js').Client,
      StdioClientTransport: require('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport,
      types: require('@modelcontextprotocol/sdk/types.js'),
      reference: require.resolve('@modelcontextprotocol/server-memory/dist/index.js'),
    };
  } catch (e) {
    const dir = path.join(process.env.H5MEM_SRCDIR || path.join(__dirname, '..', '..'), 'test', 'interop');
    console.log(`FAIL: the MCP SDK is not installed; run: npm ci --prefix ${dir}`);
    process.exit(1);
  }
  sdk.server = path.join(process.env.H5MEM_BUILDDIR || path.join(__dirname, '..', '..'), 'h5mem-mcp');
  sdk.connect = async (command, args, env) => {
    const transport = new sdk.StdioClientTransport({command, args, env: {...env, PATH: process.env.PATH},
                                                    stderr: 'pipe'});
    const client = new sdk.Client({name: 'h5mem-test', version: '1.0.0'});
    // what the server wrote to stderr, read as it comes (all of it once
    // `stderrEnd` resolves, after close)
    client.stderrText = '';
    transport.stderr.on('data', (d) => { client.stderrText += d; });
    client.stderrEnd = new Promise((resolve) => transport.stderr.on('end', resolve));
    await client.connect(transport);
    return client;
  };
  return sdk;
}

module.exports = {betterSqlite3, extPath, mcpSdk};
