// The agent CLIs people connect to Airlock, as a user connects them:
// Claude Code and Gemini CLI register Airlock with `mcp add` (on stdio and
// on HTTP), `mcp list` reports it connected, and then one print-mode
// session against a stand-in model (tests/agents/model.mjs) shows what the
// CLI hands the model: Airlock's tools in the tool list, the results of
// `echo` and `run_python`, and a refused call's text.
//
// `make test-agents` runs them, with the Node 22 that package.json
// installs: AIRLOCK_BIN=target/release/airlock AIRLOCK_TOOLS_DIR=target/guests
//   tests/agents/node_modules/node/bin/node --test 'tests/agents/*.test.mjs'

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { BIN, startHttp, writeConfig } from '../ts/support.js';
import { startModel, toolName } from './model.mjs';
import { claude, gemini, scratch, serverCommand } from './support.mjs';

/** The one text of a turn's tool results (each step makes one call). */
function resultOf(turn) {
  assert.equal(turn?.results.length, 1, `one tool result: ${JSON.stringify(turn?.results)}`);
  return turn.results[0];
}

/**
 * The scripted model: echo, run_python, then a call the policy refuses.
 * Returns what the CLI handed the model at each step.
 */
function script(model) {
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
      test(`over ${transport}: mcp add, connected${session ? ', and a session that sees the tools, results and a refusal' : ''}`, async () => {
        const setup = writeConfig();
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
          const seen = script(model);
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
        } finally {
          await model.close();
          await server?.stop();
        }
      });
    }
  });
}
