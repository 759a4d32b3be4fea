// Streamable HTTP on the wire, with plain fetch, where the SDK hides what is
// sent or does not speak the revision: session termination, stream
// resumption after a cancelled confirmation, and the 2026-07-28
// input-required flow (the TypeScript SDK 1.x stops at 2025-11-25).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import {
  ACCEPT_HEADERS, modernMeta, readMessages, readRest, readUntil, startHttp, writeConfig,
} from './support.js';

const LEGACY = '2025-11-25';
const MODERN = '2026-07-28';
const TRANSFER = { to: 'bob', amount: 20000 };
const ELICIT = { elicitation: { form: {} } };
const ACCEPT = { confirm: { action: 'accept', content: { allow: true } } };

describe('streamable HTTP on the wire', () => {
  const setup = writeConfig();
  let server;

  before(async () => {
    // Info-level logs, so that stderr has lines to check for colour codes.
    server = await startHttp(setup, { env: { RUST_LOG: 'info' } });
  });

  after(async () => {
    await server?.stop();
  });

  let nextId = 1;
  function post(body, headers = {}) {
    return fetch(server.url, { method: 'POST', headers: { ...ACCEPT_HEADERS, ...headers }, body: JSON.stringify(body) });
  }
  async function rpc(method, params, headers = {}) {
    const id = nextId++;
    const response = await post({ jsonrpc: '2.0', id, method, params }, headers);
    assert.equal(response.status, 200, await response.clone().text());
    const messages = await readMessages(response);
    const reply = messages.map((m) => m.message).find((m) => m.id === id);
    assert.ok(reply, JSON.stringify(messages));
    return reply;
  }

  /** Open a session (initialize-based revision); returns its headers. */
  async function openSession(capabilities = {}) {
    const response = await post({
      jsonrpc: '2.0', id: nextId++, method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities, clientInfo: { name: 'raw', version: '0' } },
    });
    assert.equal(response.status, 200);
    await response.text();
    const session = { 'Mcp-Session-Id': response.headers.get('mcp-session-id'), 'MCP-Protocol-Version': LEGACY };
    assert.ok(session['Mcp-Session-Id']);
    const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    assert.equal(initialized.status, 202);
    return session;
  }

  test('DELETE ends a session with 200 OK', async () => {
    const session = await openSession();
    const deleted = await fetch(server.url, { method: 'DELETE', headers: session });
    assert.equal(deleted.status, 200);
    const gone = await post({ jsonrpc: '2.0', id: nextId++, method: 'tools/list' }, session);
    assert.equal(gone.status, 404, 'the session is gone');
  });

  test('a resumed stream does not replay an answered elicitation', async () => {
    const session = await openSession({ elicitation: {} });
    const id = nextId++;
    const call = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'create_transfer', arguments: TRANSFER } }, session);
    assert.equal(call.status, 200);
    const { events, reader } = await readUntil(call, (e) => e.message.method === 'elicitation/create');
    const asked = events.find((e) => e.message.method === 'elicitation/create');
    assert.ok(asked.id, 'the elicitation has an event id to resume after');
    // The client gives up on the call; the server ends its stream.
    const cancelled = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'closed' } }, session);
    assert.equal(cancelled.status, 202);
    await readRest(reader);
    // Resuming after the last event received must not ask the user again.
    const resumed = await fetch(server.url, {
      method: 'GET',
      headers: { ...session, Accept: 'text/event-stream', 'Last-Event-ID': asked.id },
    });
    assert.equal(resumed.status, 200);
    const replayed = await readMessages(resumed);
    const again = replayed.filter((e) => e.message.method === 'elicitation/create');
    assert.deepEqual(again, [], `replayed: ${JSON.stringify(replayed)}`);
    // The session is still good.
    const next = await rpc('tools/call', { name: 'echo', arguments: { text: 'after' } }, session);
    assert.equal(next.result.isError, false);
  });

  describe('2026-07-28 (no session)', () => {
    const headers = { 'MCP-Protocol-Version': MODERN };
    const call = (args, capabilities, extra = {}) => rpc('tools/call', {
      name: 'create_transfer', arguments: args, _meta: modernMeta(capabilities), ...extra,
    }, { ...headers, 'Mcp-Method': 'tools/call', 'Mcp-Name': 'create_transfer' });

    test('a confirmation is an input-required result, finished by the retry', async () => {
      const first = (await call(TRANSFER, ELICIT)).result;
      assert.equal(first.resultType, 'input_required', JSON.stringify(first));
      assert.equal(first.inputRequests.confirm.method, 'elicitation/create');
      const done = (await call(TRANSFER, ELICIT, { inputResponses: ACCEPT, requestState: first.requestState })).result;
      assert.equal(done.resultType, 'complete');
      assert.equal(done.isError, false, JSON.stringify(done));
      assert.deepEqual(done.structuredContent, { to: 'bob', amount: 20000, status: 'done' });
    });

    test('a tampered, replayed or re-targeted requestState is one JSON-RPC error', async () => {
      const first = (await call(TRANSFER, ELICIT)).result;
      const state = first.requestState;
      const tampered = await call(TRANSFER, ELICIT, { inputResponses: ACCEPT, requestState: `${state}-TAMPERED` });
      const retargeted = await call({ to: 'eve', amount: 999999 }, ELICIT, { inputResponses: ACCEPT, requestState: state });
      assert.equal(tampered.error?.code, -32602, JSON.stringify(tampered));
      assert.deepEqual(retargeted.error, tampered.error);
      // The original call still waits for its own answer, and a state is
      // good for one answer only.
      const done = await call(TRANSFER, ELICIT, { inputResponses: ACCEPT, requestState: state });
      assert.equal(done.result?.isError, false, JSON.stringify(done));
      const replayed = await call(TRANSFER, ELICIT, { inputResponses: ACCEPT, requestState: state });
      assert.deepEqual(replayed.error, tampered.error);
    });

    test('a declined answer is an error result with the kind in _meta', async () => {
      const first = (await call(TRANSFER, ELICIT)).result;
      const declined = (await call(TRANSFER, ELICIT, { inputResponses: { confirm: { action: 'decline' } }, requestState: first.requestState })).result;
      assert.equal(declined.isError, true);
      assert.equal(declined._meta['airlock/kind'], 'declined');
      assert.equal(declined.structuredContent, undefined);
    });
  });

  test('stderr carries no colour codes when it is not a terminal', () => {
    const stderr = server.stderr();
    assert.match(stderr, /INFO|WARN/, 'the server logged something');
    assert.ok(!stderr.includes('\u001b['), JSON.stringify(stderr.slice(0, 500)));
  });
});
