// A first start, with an empty compile cache, through the official SDK
// client: it connects within the MCP Inspector's 15 s connect timeout
// although compiling the interpreters takes longer, the tools arrive with
// notifications/tools/list_changed, and a call for a tool still compiling
// waits for it and succeeds.
//
// That the server answered before compiling is shown by an order, not a
// time: the first tools/list lacks the largest component (seconds of
// compilation on any machine), a later one has every tool.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { BIN, TOOLS_DIR, serverEnv, trackStdio } from './support.js';

// The MCP Inspector gives up on a server that has not answered initialize
// within this time.
const INSPECTOR_CONNECT_TIMEOUT = 15_000;
// Liveness bound for compiling every bundled tool from nothing on a busy
// two-core machine; the waited-for tool's deadline is raised to it.
const COMPILE_BOUND = 900_000;

/** The bundled tools (by file stem) and the largest one. */
function bundled() {
  const files = readdirSync(TOOLS_DIR).filter((f) => f.endsWith('.wasm'));
  const sized = files.map((f) => ({ name: f.slice(0, -'.wasm'.length), size: statSync(path.join(TOOLS_DIR, f)).size }));
  sized.sort((a, b) => b.size - a.size);
  return { names: new Set(sized.map((t) => t.name)), largest: sized[0].name };
}

test('a first start answers within the Inspector timeout and lists each tool once compiled', async () => {
  const { names, largest } = bundled();
  const dir = mkdtempSync(path.join(tmpdir(), 'airlock-ts-startup-'));
  const config = path.join(dir, 'airlock.toml');
  writeFileSync(config, `
tool_dirs = [${JSON.stringify(TOOLS_DIR)}]

# A list during start-up answers at once with the tools ready so far (as it
# does once the wait has passed), so the order of events is the proof.
[serve]
startup_list_wait_secs = 0

[engine]
cache_dir = ${JSON.stringify(path.join(dir, 'empty-cache'))}

[tools.${largest}]
timeout_ms = ${COMPILE_BOUND}
`);
  const client = new Client({ name: 'airlock-ts-startup', version: '0' }, { capabilities: {} });
  let wake = () => {};
  let notices = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    notices += 1;
    wake();
  });
  const transport = new StdioClientTransport({
    command: BIN, args: ['--config', config, 'serve', '--stdio'], env: serverEnv(), stderr: 'pipe',
  });
  try {
    await client.connect(transport, { timeout: INSPECTOR_CONNECT_TIMEOUT });
    trackStdio(transport);
    const listed = async () => new Set((await client.listTools()).tools.map((t) => t.name));
    // Notices counted before each list: one that comes during it is not missed.
    let seen = notices;
    let tools = await listed();
    assert.ok(!tools.has(largest), `the first list already has ${largest}: ${[...tools]}`);
    const args = largest.startsWith('run_') ? { code: '1+1' } : {};
    const call = client.callTool({ name: largest, arguments: args }, undefined, { timeout: COMPILE_BOUND });
    const deadline = Date.now() + COMPILE_BOUND;
    while (tools.size < names.size) {
      await new Promise((resolve) => {
        wake = resolve;
        if (notices > seen) resolve();
        setTimeout(resolve, Math.max(0, deadline - Date.now())).unref();
      });
      assert.ok(notices > seen, `no list_changed within ${COMPILE_BOUND} ms; listed so far: ${[...tools]}`);
      seen = notices;
      tools = await listed();
    }
    assert.deepEqual([...tools].sort(), [...names].sort());
    assert.ok(notices >= 1, 'tools that became ready were announced');
    const result = await call;
    assert.notEqual(result.isError, true, JSON.stringify(result));
    if (largest.startsWith('run_')) assert.equal(result.structuredContent?.result, 2, JSON.stringify(result));
  } finally {
    await client.close();
  }
});
