// What each protocol revision gets over streamable HTTP. SSE priming events
// (an event id with empty `data`, SEP-1699) came with 2025-11-25; a client
// of 2025-06-18 parses every event's data as a message. The TypeScript SDK
// 1.22.0 (pinned in package.json as `mcp-sdk-2025-06-18`, the last release
// whose newest revision is 2025-06-18, as in Gemini CLI) runs
// `JSON.parse("")` on one and reports `Unexpected end of JSON input`, and
// Gemini CLI then drops the connection. So such a client must list and
// call tools without a transport error, and its streams carry no priming
// event; a 2025-11-25 client's do.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { Client } from 'mcp-sdk-2025-06-18/client/index.js';
import { StreamableHTTPClientTransport } from 'mcp-sdk-2025-06-18/client/streamableHttp.js';

import { ACCEPT_HEADERS, CALL_TIMEOUT, START_TIMEOUT, startHttp, writeConfig } from './support.js';

/** The raw event stream of an `initialize` asking for `revision`. */
async function initialize(url, revision) {
  const response = await fetch(url, {
    method: 'POST',
    headers: ACCEPT_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
    }),
    signal: AbortSignal.timeout(CALL_TIMEOUT),
  });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^text\/event-stream/);
  return response.text();
}

/** The events of an SSE text whose `data` is empty (priming events). */
function priming(text) {
  return text.split(/\n\n/).filter((event) => {
    const data = event.split('\n').filter((line) => line.startsWith('data:'));
    return data.length > 0 && data.every((line) => line.slice(5).trim() === '');
  });
}

describe('protocol revisions over streamable HTTP', () => {
  const setup = writeConfig();
  let server;

  before(async () => {
    server = await startHttp(setup);
  });

  after(async () => {
    await server?.stop();
  });

  test('a 2025-06-18 client (TypeScript SDK 1.22.0) lists and calls tools without a transport error', async () => {
    const client = new Client({ name: 'sdk-2025-06-18', version: '0' });
    const errors = [];
    client.onerror = (error) => errors.push(String(error));
    const transport = new StreamableHTTPClientTransport(new URL(server.url));
    await client.connect(transport, { timeout: START_TIMEOUT });
    try {
      assert.equal(transport.protocolVersion, '2025-06-18');
      // `serve` loads the tools in the background: list until echo is there.
      const deadline = Date.now() + START_TIMEOUT;
      let names = [];
      while (!names.includes('echo') && Date.now() < deadline) {
        names = (await client.listTools({}, { timeout: CALL_TIMEOUT })).tools.map((tool) => tool.name);
      }
      assert.ok(names.includes('echo'), names.join(', '));
      const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hi' } }, undefined, { timeout: CALL_TIMEOUT });
      assert.equal(echoed.isError, false, JSON.stringify(echoed));
      await client.ping({ timeout: CALL_TIMEOUT });
      assert.deepEqual(errors, [], 'the SDK reported no transport error (a priming event is one)');
    } finally {
      await client.close();
    }
  });

  test('priming events go to 2025-11-25 and later, not to 2025-06-18', async () => {
    const old = await initialize(server.url, '2025-06-18');
    assert.deepEqual(priming(old), [], old);
    assert.match(old, /"protocolVersion":"2025-06-18"/);
    const current = await initialize(server.url, '2025-11-25');
    assert.equal(priming(current).length, 1, current);
    assert.match(priming(current)[0], /^data: \nid: 0\n/);
  });
});
