// Clients that start a server per call, on stdio: the MCP Inspector CLI
// (each `--cli --method tools/call` starts `airlock serve --stdio`, calls
// and exits) and an SDK client that does the same (as LlamaIndex's command
// client and LangChain's `get_tools()` do). Each lists the tools, calls
// `echo` and `run_python`, and gets a refused call's text, every request
// from a server process of its own.
//
// And a call that needs a person's approval on Airlock's page (`[approvals]
// mode = "page"`, served on `[approvals] listen`): the result hands the
// link over, the server exits, and the page is still served, by the
// process the server handed it to (`airlock __page`, which keeps its state
// in `[approvals] state_dir`). The person (the test, with a software
// passkey: tests/ts/softkey.js) approves there; the same call made again,
// in a new server, runs once (the audit log says so), and the page's
// process ends by itself once nothing waits.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  BIN, CALL_TIMEOUT, Client, StdioClientTransport, answerOnPage, kindOf, linkInText, serverEnv, textOf, trackStdio,
  writeConfig,
} from '../ts/support.js';
import { INSPECTOR, NODE, approvalConfig, auditOutcomes, pageProcessRuns, run, scratch, stopPageProcess } from './support.mjs';

/** The Inspector CLI, one process per call, in a scratch HOME. */
function inspector(setup) {
  const place = scratch('inspector');
  const env = { ...serverEnv(), HOME: place.home, MCP_CATALOG_PATH: `${place.root}/mcp.json` };
  // The Inspector's own `--config` is its session file: the server's
  // config and tools dir go in the server's environment (`-e`).
  const server = [
    '-e', `AIRLOCK_CONFIG=${setup.config}`, '-e', `AIRLOCK_TOOLS_DIR=${env.AIRLOCK_TOOLS_DIR}`, BIN, 'serve', '--stdio',
  ];
  const cli = async (...args) => {
    const done = await run(NODE, [INSPECTOR, '--cli', ...args, ...server], { env, cwd: place.work });
    // It prints the result and exits 0, or 5 for a result with isError.
    assert.ok(done.code === 0 || done.code === 5, `inspector ${args.join(' ')} exited ${done.code}: ${done.stdout}${done.stderr}`);
    const result = JSON.parse(done.stdout);
    assert.equal(done.code === 5, result.isError === true, `inspector exit ${done.code} for ${done.stdout}`);
    return result;
  };
  return {
    list: async () => (await cli('--method', 'tools/list')).tools.map((t) => t.name),
    call: (name, args) => cli('--method', 'tools/call', '--tool-name', name,
      ...Object.entries(args).flatMap(([k, v]) => ['--tool-arg', `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`])),
  };
}

/** An SDK client that starts `airlock serve --stdio` for every request. */
function sdkPerCall(setup) {
  const once = async (use) => {
    const client = new Client({ name: 'per-call', version: '0' }, { capabilities: {} });
    const transport = new StdioClientTransport({ command: BIN, args: ['--config', setup.config, 'serve', '--stdio'], env: serverEnv(), stderr: 'pipe' });
    try {
      await client.connect(transport, { timeout: CALL_TIMEOUT });
      trackStdio(transport);
      return await use(client);
    } finally {
      await client.close();
    }
  };
  return {
    list: () => once(async (c) => (await c.listTools(undefined, { timeout: CALL_TIMEOUT })).tools.map((t) => t.name)),
    call: (name, args) => once((c) => c.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT })),
  };
}

for (const [name, make] of [['MCP Inspector CLI', inspector], ['an SDK client with a server per call', sdkPerCall]]) {
  describe(name, () => {
    test('lists, calls and is refused, a server per request', async () => {
      const setup = writeConfig();
      const client = make(setup);

      const tools = await client.list();
      for (const tool of ['echo', 'run_python', 'create_transfer']) assert.ok(tools.includes(tool), tools.join(', '));

      const echo = await client.call('echo', { text: 'per call' });
      assert.notEqual(echo.isError, true, JSON.stringify(echo));
      assert.match(textOf(echo), /per call/);

      const python = await client.call('run_python', { code: '6 * 7' });
      assert.notEqual(python.isError, true, JSON.stringify(python));
      assert.match(textOf(python), /\b42\b/);

      const refused = await client.call('create_transfer', { to: 'mallory', amount: 1 });
      assert.equal(refused.isError, true, JSON.stringify(refused));
      assert.match(textOf(refused), /denied.*mallory/s);
    });

    test('a call that needs approval: the link, approved on the page after the server ended, the call made again runs once', async () => {
      const setup = await approvalConfig({ listen: true });
      const client = make(setup);
      try {
        const transfer = { to: 'bob', amount: 20001 };
        const first = await client.call('create_transfer', transfer);
        assert.equal(first.isError, true, JSON.stringify(first));
        assert.equal(kindOf(first), 'approval_required', textOf(first));
        assert.match(textOf(first), /Show the user this link/);
        const link = linkInText(textOf(first));
        assert.match(link, /^http:\/\/localhost:\d+\/approvals\//);

        // The server that opened the approval ends: the page is served by
        // the process it handed it to.
        assert.ok(await pageProcessRuns(setup, true), 'no process serves the page after the server ended');
        const card = await answerOnPage(setup, link, 'approve');
        assert.match(card, /create_transfer/);
        assert.match(card, /20001/);

        const ran = await client.call('create_transfer', transfer);
        assert.notEqual(ran.isError, true, JSON.stringify(ran));
        assert.deepEqual(ran.structuredContent, { ...transfer, status: 'done' });
        assert.deepEqual(auditOutcomes(setup, 'create_transfer'), ['approval_required', 'ok'], 'the transfer ran once');
        assert.ok(await pageProcessRuns(setup, false), "the page's process did not end once nothing waited");
      } finally {
        await stopPageProcess(setup);
      }
    });
  });
}
