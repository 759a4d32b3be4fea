// Approvals on Airlock's own page with the official MCP TypeScript SDK
// client (1.x, which speaks the initialize-based revisions up to
// 2025-11-25), over stdio and streamable HTTP.
//
// With `[approvals] mode = "page"` a call the policy asks about (here
// create_transfer, which has side effects) runs only once the person
// approves it on a page Airlock serves. A client that declares URL-mode
// elicitation (`elicitation: { url: {} }`) is sent `elicitation/create`
// with `mode: "url"` and the link, and the held call finishes once the
// page is answered; here the client's handler plays the person, who opens
// the link and presses Approve or Decline, as tests/mcp/test_approvals.py
// does with the Python SDK. A client without URL mode (no elicitation, or
// form mode only), and one that declines or cancels the link (Claude Code
// in `-p` cannot open one and cancels), gets an `approval_required` result
// with the link, once, and the same call made again after the approval
// runs once. Without `[http.jwt]` only a passkey answers: the person's is a
// software one (softkey.js), enrolled through the operator's one-time link.

import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ElicitationCompleteNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { CALL_TIMEOUT, answerOnPage, connect, kindOf, linkIn, startHttp, textOf, writeConfig } from './support.js';

// Over HTTP the page is served on the MCP origin; a stdio server needs an
// address of its own.
const PAGE = '\n[approvals]\nmode = "page"\n';
const PAGE_LISTEN = `${PAGE}listen = "127.0.0.1:0"\n`;

for (const transport of ['stdio', 'http']) {
  describe(`approvals on the page, TypeScript SDK over ${transport}`, () => {
    const setup = writeConfig({ extra: transport === 'stdio' ? PAGE_LISTEN : PAGE });
    // The people's passkeys are kept with the approvals, in this test's own directory.
    appendFileSync(setup.config, `state_dir = ${JSON.stringify(path.join(setup.dir, 'state'))}\n`);
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
      // Notifications the server sends (notifications/elicitation/complete).
      connected.completed = [];
      connected.client.setNotificationHandler(ElicitationCompleteNotificationSchema, (note) => {
        connected.completed.push(note.params);
      });
      return connected;
    }

    /** A URL-mode client whose person answers `decision` on the page. */
    async function urlModeClient(decision) {
      const cards = [];
      const connected = await client({
        elicitation: { url: {} },
        elicit: async (request) => {
          assert.equal(request.params.mode, 'url', JSON.stringify(request.params));
          cards.push(await answerOnPage(setup, request.params.url, decision));
          return { action: 'accept' };
        },
      });
      return { ...connected, cards };
    }

    // Each test transfers its own amount: identical calls of one principal
    // share an approval.
    test('URL mode: the client is sent to the page, the person approves, and the held call runs', async () => {
      const { client: c, asked, cards, completed } = await urlModeClient('approve');
      const transfer = { to: 'bob', amount: 20001 };
      const result = await c.callTool({ name: 'create_transfer', arguments: transfer }, undefined, { timeout: CALL_TIMEOUT });
      assert.equal(result.isError, false, textOf(result));
      assert.deepEqual(result.structuredContent, { ...transfer, status: 'done' });
      if (transport === 'http') assert.equal(c.transport.protocolVersion, '2025-11-25');
      assert.equal(asked.length, 1, JSON.stringify(asked));
      const [{ url, elicitationId, message }] = asked;
      // A page on loopback is served as localhost: a passkey's relying party is a domain.
      assert.match(url, /^http:\/\/localhost:\d+\/approvals\/[^?]+\?sig=/);
      // The approval's id, then the elicitation's own.
      assert.match(elicitationId, /^[0-9a-f]{32}\.[0-9a-f]{32}$/, JSON.stringify(asked[0]));
      assert.ok(url.includes(`/approvals/${elicitationId.split('.')[0]}?`), JSON.stringify(asked[0]));
      assert.ok(message.length > 0);
      assert.equal(cards.length, 1);
      assert.match(cards[0], /create_transfer/);
      assert.match(cards[0], /20001/);
      // The server says the elicitation is over once the page was answered;
      // it may arrive just after the result.
      const deadline = Date.now() + CALL_TIMEOUT;
      while (completed.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(completed.map((p) => p.elicitationId), [elicitationId]);
    });

    test('URL mode: declined on the page, the held call comes back declined', async () => {
      const { client: c, asked } = await urlModeClient('decline');
      const result = await c.callTool({ name: 'create_transfer', arguments: { to: 'bob', amount: 20002 } });
      assert.equal(result.isError, true, JSON.stringify(result));
      assert.equal(kindOf(result), 'declined', textOf(result));
      assert.match(textOf(result), /^error \(declined\): .*not given/);
      assert.equal(asked.length, 1);
    });

    // A client that cannot open the link (Claude Code in `-p` cancels) or
    // whose person declines to: the result carries the link for the model
    // to show, once; a person who approves it later lets the same call run.
    for (const [action, amount] of [['cancel', 20003], ['decline', 20006]]) {
      test(`URL mode: a client that answers ${action} gets approval_required with the link, once`, async () => {
        const { client: c, asked } = await client({ elicitation: { url: {} }, elicit: async () => ({ action }) });
        const transfer = { to: 'bob', amount };
        const first = await c.callTool({ name: 'create_transfer', arguments: transfer });
        assert.equal(kindOf(first), 'approval_required', textOf(first));
        assert.equal(asked.length, 1, JSON.stringify(asked));
        assert.match(asked[0].elicitationId, /^[0-9a-f]{32}\.[0-9a-f]{32}$/);
        const link = linkIn(first);
        assert.equal(link, asked[0].url, 'the link the client was asked to open');
        assert.match(textOf(first), /Show the user this link/);
        await answerOnPage(setup, link, 'approve');
        const ran = await c.callTool({ name: 'create_transfer', arguments: transfer });
        assert.equal(ran.isError, false, textOf(ran));
        assert.equal(asked.length, 1, 'an approved call does not ask again');
      });
    }

    // A client that cannot open a link: none declared, or only form mode
    // (the SDK's `elicitation: {}` means form mode), which the page never
    // uses since the client could answer a form for the person.
    for (const [what, options, amount] of [
      ['no elicitation', {}, 20004],
      ['form-mode elicitation only', { elicit: async () => assert.fail('the page never asks through a form') }, 20005],
    ]) {
      test(`${what}: approval_required with the link, then the call made again runs once`, async () => {
        const { client: c, asked } = await client(options);
        const transfer = { to: 'bob', amount };
        const first = await c.callTool({ name: 'create_transfer', arguments: transfer });
        assert.equal(first.isError, true, JSON.stringify(first));
        assert.equal(kindOf(first), 'approval_required', textOf(first));
        assert.match(textOf(first), /wait until the user says it is approved, then make it again \(made sooner, it will not run\)\.$/);
        assert.doesNotMatch(textOf(first), /approval of local/);
        assert.equal(first.structuredContent, undefined);
        const link = linkIn(first);
        const card = await answerOnPage(setup, link, 'approve');
        assert.match(card, new RegExp(String(amount)));
        const ran = await c.callTool({ name: 'create_transfer', arguments: transfer });
        assert.equal(ran.isError, false, textOf(ran));
        assert.deepEqual(ran.structuredContent, { ...transfer, status: 'done' });
        const once = await c.callTool({ name: 'create_transfer', arguments: transfer });
        assert.equal(kindOf(once), 'approval_required', 'an approval runs one call');
        assert.notEqual(linkIn(once), link);
        assert.equal(asked.length, 0, JSON.stringify(asked));
      });
    }
  });
}
