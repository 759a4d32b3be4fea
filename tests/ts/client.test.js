// End-to-end: the official MCP TypeScript SDK client (1.x) against
// `airlock serve`, over stdio and over streamable HTTP.
//
// The SDK checks a result's structuredContent against the tool's
// outputSchema (for error results too) and throws when it does not match:
// every error kind is called here through `callTool` and must come back as
// a readable result, not an exception. The SDK speaks the initialize-based
// revisions (up to 2025-11-25): the 2026-07-28 flow is tested on the wire in
// wire.test.js.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { CALL_TIMEOUT, connect, kindOf, startHttp, textOf, writeConfig } from './support.js';

const TRANSFER = { to: 'bob', amount: 20000 };

for (const transport of ['stdio', 'http']) {
  describe(`TypeScript SDK over ${transport}`, () => {
    const setup = writeConfig();
    let server;
    const open = [];

    before(async () => {
      if (transport === 'http') server = await startHttp(setup);
    });

    after(async () => {
      await Promise.allSettled(open.map((c) => c.close()));
      await server?.stop();
    });

    async function client(options = {}) {
      const connected = await connect(transport, setup, { server, ...options });
      open.push(connected);
      return connected;
    }

    test('lists the tools with their schemas', async () => {
      const { client: c } = await client();
      const { tools } = await c.listTools();
      const names = tools.map((t) => t.name);
      for (const name of ['echo', 'hostile', 'create_transfer']) assert.ok(names.includes(name), names.join(', '));
      const hostile = tools.find((t) => t.name === 'hostile');
      assert.equal(hostile.outputSchema?.type, 'object', 'hostile declares an output schema');
    });

    test('a successful call carries text and structured content', async () => {
      const { client: c } = await client();
      const result = await c.callTool({ name: 'echo', arguments: { text: 'héllo' } });
      assert.equal(result.isError, false);
      assert.deepEqual(JSON.parse(textOf(result)), { text: 'héllo' });
      assert.deepEqual(result.structuredContent, { text: 'héllo' });
    });

    // Each failure is a result the model can read; none throws in the SDK.
    const failures = [
      ['invalid arguments', 'echo', { text: 5 }, 'invalid_arguments', /^error \(invalid_arguments\): .*text/s],
      ['a denial', 'create_transfer', { to: 'mallory', amount: 1 }, 'denied', /^error \(denied\): .*mallory/],
      ['a declined confirmation (no elicitation capability)', 'create_transfer', TRANSFER, 'declined', /^error \(declined\): /],
      ['a timeout', 'hostile', { attack: 'loop' }, 'timeout', /^error \(timeout\): /],
      ['a tool error (tool with an output schema)', 'hostile', { attack: 'tool_error' }, 'tool_error', /^tool error \(not_found\): /],
      ['a trap', 'hostile', { attack: 'panic', marker: 'boom' }, 'trapped', /^error \(trapped\): /],
      ['an output that fails the output schema', 'hostile', { attack: 'bad_output' }, 'invalid_output', /^error \(invalid_output\): /],
      ['an unknown tool', 'ehco', { text: 'hi' }, 'unknown_tool', /^error \(unknown_tool\): .*echo/s],
    ];
    for (const [what, name, args, kind, text] of failures) {
      test(`${what} is an error result the client can read`, async () => {
        const { client: c } = await client();
        const result = await c.callTool({ name, arguments: args });
        assert.equal(result.isError, true, JSON.stringify(result));
        assert.equal(kindOf(result), kind, JSON.stringify(result));
        assert.match(textOf(result), text);
        assert.equal(result.structuredContent, undefined, 'an error result has no structured content');
        // The connection is still good for the next call.
        const next = await c.callTool({ name: 'echo', arguments: { text: 'after' } });
        assert.equal(next.isError, false);
      });
    }

    test('a tool error carries its code as data', async () => {
      const { client: c } = await client();
      const result = await c.callTool({ name: 'hostile', arguments: { attack: 'tool_error' } });
      assert.deepEqual(result._meta, {
        'airlock/kind': 'tool_error', 'airlock/code': 'not_found', 'airlock/blame': 'tool', 'airlock/retry': 'unknown',
      });
    });

    test('an unknown tool names the available tools, closest first', async () => {
      const { client: c } = await client();
      const result = await c.callTool({ name: 'ech', arguments: {} });
      const text = textOf(result);
      assert.ok(text.indexOf('echo') >= 0, text);
      assert.ok(text.indexOf('echo') < text.indexOf('hostile'), `echo is the closest name: ${text}`);
    });

    test('elicitation: accept runs the call', async () => {
      const { client: c, asked } = await client({ elicit: async () => ({ action: 'accept', content: { allow: true } }) });
      const result = await c.callTool({ name: 'create_transfer', arguments: TRANSFER });
      assert.equal(result.isError, false, textOf(result));
      assert.deepEqual(result.structuredContent, { to: 'bob', amount: 20000, status: 'done' });
      assert.equal(asked.length, 1);
      assert.match(asked[0].message, /^local wants to call create_transfer with \{.*"amount":20000.*Allow\?$/);
      assert.equal(asked[0].requestedSchema.properties.allow.type, 'boolean');
    });

    for (const [answer, reply] of [
      ['decline', { action: 'decline' }],
      ['cancel', { action: 'cancel' }],
      ['accept with allow=false', { action: 'accept', content: { allow: false } }],
    ]) {
      test(`elicitation: ${answer} declines the call`, async () => {
        const { client: c, asked } = await client({ elicit: async () => reply });
        const result = await c.callTool({ name: 'create_transfer', arguments: TRANSFER });
        assert.equal(result.isError, true);
        assert.equal(kindOf(result), 'declined');
        assert.match(textOf(result), /^error \(declined\): .*did not confirm/);
        assert.equal(asked.length, 1);
      });
    }

    test('progress keeps a call alive while the user has not answered', async () => {
      // The user answers only after two progress notifications; the
      // client's request timeout (reset on progress) never fires meanwhile.
      let notified;
      const twice = new Promise((resolve) => {
        let count = 0;
        notified = () => { count += 1; if (count === 2) resolve(); };
      });
      const { client: c } = await client({
        elicit: async () => {
          await twice;
          return { action: 'accept', content: { allow: true } };
        },
      });
      const progress = [];
      const result = await c.callTool({ name: 'create_transfer', arguments: TRANSFER }, undefined, {
        onprogress: (p) => { progress.push(p); notified(); },
        resetTimeoutOnProgress: true,
        timeout: CALL_TIMEOUT,
      });
      assert.equal(result.isError, false, textOf(result));
      assert.ok(progress.length >= 2, JSON.stringify(progress));
      assert.match(progress[0].message, /waiting for the user/);
      assert.ok(progress[1].progress > progress[0].progress, 'progress increases');
    });

    test('an AbortSignal cancels a call waiting for confirmation', async () => {
      const controller = new AbortController();
      const { client: c, asked } = await client({
        // The question reached the user: the call is in flight. Abort it
        // and never answer.
        elicit: () => { controller.abort('the user closed the dialog'); return new Promise(() => {}); },
      });
      await assert.rejects(
        c.callTool({ name: 'create_transfer', arguments: TRANSFER }, undefined, { signal: controller.signal }),
        (err) => { assert.match(String(err), /closed the dialog|abort/i); return true; },
      );
      assert.equal(asked.length, 1);
      const next = await c.callTool({ name: 'echo', arguments: { text: 'after' } });
      assert.equal(next.isError, false);
    });
  });
}

// A running guest is interrupted by cancellation: hostile runs exclusively,
// so the next hostile call is only served once the sleeping one is gone.
for (const transport of ['stdio', 'http']) {
  test(`an AbortSignal interrupts a running guest (${transport})`, async () => {
    const setup = writeConfig({ hostileTimeoutMs: 600_000 });
    const server = transport === 'http' ? await startHttp(setup) : undefined;
    let close;
    try {
      const connected = await connect(transport, setup, { server });
      close = connected.close;
      const c = connected.client;
      const controller = new AbortController();
      const sleeping = c.callTool({ name: 'hostile', arguments: { attack: 'sleep', ms: 600_000 } }, undefined, {
        signal: controller.signal,
      });
      // Whether the cancellation arrives before or after the guest starts,
      // the call ends cancelled; the next call proves the guest is gone.
      setTimeout(() => controller.abort('enough'), 300);
      await assert.rejects(sleeping);
      const next = await c.callTool({ name: 'hostile', arguments: { attack: 'ok' } }, undefined, { timeout: CALL_TIMEOUT });
      assert.equal(next.isError, false, textOf(next));
      assert.deepEqual(next.structuredContent, { value: 1 });
    } finally {
      await close?.();
      await server?.stop();
    }
  });
}
