// The agent CLIs people connect to Airlock, as a user connects them:
// Claude Code and Gemini CLI register Airlock with `mcp add` (on stdio and
// on HTTP), `mcp list` reports it connected, and then one print-mode
// session against a stand-in model (tests/agents/model.mjs) shows what the
// CLI hands the model: Airlock's tools in the tool list, the results of
// `echo` and `run_python`, a refused call's text, and a call that needs a
// person's approval on Airlock's page (`[approvals] mode = "page"`: on the
// MCP origin over HTTP, on `[approvals] listen` on stdio). That call's
// result hands the model the link and tells it to show it to the user;
// the person (the test, with a software passkey: tests/ts/softkey.js)
// approves on the page, and the same call made again runs, once (the
// audit log says so). A CLI that declares URL elicitation and cancels it
// (Claude Code in print mode cannot open a link) gets the same result with
// the link.
//
// `make test-agents` runs them, with the Node 22 that package.json
// installs: AIRLOCK_BIN=target/release/airlock AIRLOCK_TOOLS_DIR=target/guests
//   tests/agents/node_modules/node/bin/node --test 'tests/agents/*.test.mjs'

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { BIN, answerOnPage, linkInText, startHttp } from '../ts/support.js';
import { startModel, toolName } from './model.mjs';
import { approvalConfig, auditOutcomes, claude, gemini, scratch, serverCommand, stopPageProcess } from './support.mjs';

/** The one text of a turn's tool results (each step makes one call). */
function resultOf(turn) {
  assert.equal(turn?.results.length, 1, `one tool result: ${JSON.stringify(turn?.results)}`);
  return turn.results[0];
}

// A transfer the policy asks a person about.
const TRANSFER = { to: 'bob', amount: 20001 };

/**
 * The scripted model: echo, run_python, a call the policy refuses, then a
 * transfer that needs approval; the person approves it on the page at the
 * link the model was handed (`setup`'s), and the model makes the same call
 * again. Returns what the CLI handed the model at each step.
 */
function script(model, setup) {
  const seen = {};
  model.script([
    (turn) => {
      seen.first = turn;
      return { call: 'echo', input: { text: 'hello from the model' } };
    },
    (turn) => {
      seen.echo = resultOf(turn);
      return { call: 'run_python', input: { code: '6 * 7' } };
    },
    (turn) => {
      seen.python = resultOf(turn);
      return { call: 'create_transfer', input: { to: 'mallory', amount: 1 } };
    },
    (turn) => {
      seen.refused = resultOf(turn);
      return { call: 'create_transfer', input: TRANSFER };
    },
    async (turn) => {
      seen.pending = resultOf(turn);
      seen.card = await answerOnPage(setup, linkInText(seen.pending.text), 'approve');
      return { call: 'create_transfer', input: TRANSFER };
    },
    (turn) => {
      seen.approved = resultOf(turn);
      return { text: 'Done.' };
    },
  ]);
  return seen;
}

// Each CLI, and the transports its print-mode session runs over.
const CLIS = [['Claude Code', claude, ['stdio', 'http']], ['Gemini CLI', gemini, ['stdio', 'http']]];

for (const [name, make, sessions] of CLIS) {
  describe(name, () => {
    for (const transport of ['stdio', 'http']) {
      const session = sessions.includes(transport);
      test(`over ${transport}: mcp add, connected${session ? ', and a session that sees the tools, results, a refusal and an approval on the page' : ''}`, async () => {
        const setup = await approvalConfig({ listen: transport === 'stdio' });
        const model = await startModel();
        let server;
        try {
          if (transport === 'http') server = await startHttp(setup);
          const place = scratch(name.split(' ')[0].toLowerCase());
          const cli = make(place, model);

          const added = transport === 'stdio' ? await cli.addStdio(serverCommand(BIN, setup)) : await cli.addHttp(server.url);
          assert.equal(added.code, 0, `mcp add: ${added.stdout}${added.stderr}`);
          const listed = await cli.list();
          assert.equal(listed.code, 0, `mcp list: ${listed.stdout}${listed.stderr}`);
          assert.match(`${listed.stdout}${listed.stderr}`, /airlock.*Connected/i, 'mcp list reports Airlock connected');

          if (!session) return;
          const seen = script(model, setup);
          const ran = await cli.prompt('Use the airlock tools as the task needs.');
          const transcript = `${ran.stdout}\n${ran.stderr}\nmodel errors: ${model.errors.join('\n')}`;
          assert.deepEqual(model.errors, [], transcript);
          assert.equal(ran.code, 0, transcript);

          // The model was offered Airlock's tools, by name, with their schemas.
          assert.ok(seen.first, `the model was never asked with tools: ${transcript}`);
          for (const tool of ['echo', 'run_python', 'create_transfer']) {
            const def = seen.first.toolDefs.find((d) => d.name === toolName(seen.first.tools, tool));
            assert.ok(def, `${tool} is not among the tools offered to the model: ${seen.first.tools.join(', ')}`);
            assert.notEqual(def.defer_loading, true, `${tool} is offered only through tool search`);
          }
          assert.match(seen.echo.text, /hello from the model/);
          assert.equal(seen.echo.isError, false, seen.echo.text);
          assert.match(seen.python.text, /\b42\b/);
          assert.match(seen.refused.text, /denied/);
          assert.match(seen.refused.text, /mallory/);

          // The model was handed the link to show the user; the person
          // approved there, and the call made again ran, once.
          assert.match(seen.pending.text, /needs the approval of .* on Airlock's approval page/s);
          assert.match(seen.pending.text, /Show the user this link/);
          // A page on loopback is served as localhost (a passkey's relying party is a name).
          const page = transport === 'stdio' ? setup.page : new URL(server.url).origin.replace('127.0.0.1', 'localhost');
          assert.ok(linkInText(seen.pending.text).startsWith(`${page}/approvals/`), seen.pending.text);
          assert.match(seen.card, /create_transfer/);
          assert.match(seen.card, /20001/);
          assert.equal(seen.approved.isError, false, seen.approved.text);
          assert.match(seen.approved.text, /done/);
          // A CLI that declares URL elicitation on the 2026-07-28 revision is
          // first handed the link as an input request; it cancels (print
          // mode cannot open a link) and makes the call again, which returns
          // the link: one approval_required more, and still one transfer.
          const outcomes = auditOutcomes(setup, 'create_transfer').join(' ');
          assert.match(outcomes, /^denied (approval_required ){1,2}ok$/, `the transfer ran once, after the approval: ${outcomes}`);
        } finally {
          await model.close();
          await server?.stop();
          // A stdio server that ended while the approval waited handed its page on.
          await stopPageProcess(setup);
        }
      });
    }
  });
}
