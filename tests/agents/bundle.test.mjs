// The bundles `make bundle` builds, installed as a user installs them:
// Claude Code adds the plugin marketplace, installs the `airlock` plugin,
// reports its server connected, and a session against the stand-in model
// is offered the plugin's tools and gets echo's result; the `.mcpb`,
// unpacked by `mcpb unpack`, starts the server its manifest names (as
// Claude Desktop does) and serves the bundled tools it lists, found beside
// the binary.
//
// Needs `make bundle` first (`make test-agents` and `make test` build it);
// AIRLOCK_BUNDLE names its directory (target/bundle by default).

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

import { CACHE_DIR, CALL_TIMEOUT, Client, StdioClientTransport, textOf, trackStdio } from '../ts/support.js';
import { startModel, toolName } from './model.mjs';
import { claude, run, scratch } from './support.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUNDLE = path.resolve(process.env.AIRLOCK_BUNDLE ?? path.join(ROOT, 'target/bundle'));
const MCPB_TOOL = path.join(ROOT, 'deploy/clients/node_modules/.bin/mcpb');

// The bundles' servers find their tools beside the binary: no
// AIRLOCK_TOOLS_DIR. They share the tests' compiled-component cache, so a
// first start does not compile every tool again.
function bundleEnv(base = process.env) {
  const env = Object.fromEntries(Object.entries(base).filter(([k]) => !k.startsWith('AIRLOCK_')));
  env.AIRLOCK_CACHE_DIR = CACHE_DIR;
  return env;
}

test('the Claude Code plugin: installed from its marketplace, connected, its tools offered to the model', async () => {
  const place = scratch('plugin');
  const model = await startModel();
  try {
    const cli = claude(place, model, { AIRLOCK_CACHE_DIR: CACHE_DIR });
    const added = await cli.run('plugin', 'marketplace', 'add', path.join(BUNDLE, 'claude-marketplace'));
    assert.equal(added.code, 0, `marketplace add: ${added.stdout}${added.stderr}`);
    const installed = await cli.run('plugin', 'install', 'airlock@airlock');
    assert.equal(installed.code, 0, `plugin install: ${installed.stdout}${installed.stderr}`);
    const listed = await cli.list();
    assert.match(`${listed.stdout}${listed.stderr}`, /plugin:airlock:airlock:.*Connected/, `mcp list: ${listed.stdout}${listed.stderr}`);

    const seen = {};
    model.script([
      (turn) => {
        seen.first = turn;
        return { call: 'echo', input: { text: 'from the plugin' } };
      },
      (turn) => {
        seen.echo = turn.results[0];
        return { text: 'Done.' };
      },
    ]);
    const session = await cli.run('-p', 'Use the airlock tools.', '--output-format', 'json', '--allowedTools', 'mcp__plugin_airlock_airlock');
    const transcript = `${session.stdout}\n${session.stderr}\nmodel errors: ${model.errors.join('\n')}`;
    assert.deepEqual(model.errors, [], transcript);
    assert.equal(session.code, 0, transcript);
    for (const tool of ['echo', 'run_python', 'read_file']) {
      assert.ok(toolName(seen.first.tools, tool), `${tool} is not offered: ${seen.first.tools.join(', ')}`);
    }
    assert.match(seen.echo?.text ?? '', /from the plugin/, transcript);
  } finally {
    await model.close();
  }
});

test('the .mcpb: unpacked, the server its manifest names serves the tools it lists', async () => {
  const place = scratch('mcpb');
  const file = readdirSync(BUNDLE).find((name) => name.endsWith('.mcpb'));
  assert.ok(file, `no .mcpb in ${BUNDLE}: run \`make bundle\``);
  const dir = path.join(place.root, 'extension');
  const unpacked = await run(MCPB_TOOL, ['unpack', path.join(BUNDLE, file), dir], { env: process.env, cwd: place.work });
  assert.equal(unpacked.code, 0, `mcpb unpack: ${unpacked.stdout}${unpacked.stderr}`);

  const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
  const expand = (value) => value.replaceAll('${__dirname}', dir);
  const { command, args } = manifest.server.mcp_config;
  const client = new Client({ name: 'mcpb', version: '0' }, { capabilities: {} });
  const transport = new StdioClientTransport({ command: expand(command), args: args.map(expand), env: bundleEnv(), stderr: 'pipe' });
  try {
    await client.connect(transport, { timeout: CALL_TIMEOUT });
    trackStdio(transport);
    const { tools } = await client.listTools(undefined, { timeout: CALL_TIMEOUT });
    assert.deepEqual(tools.map((t) => t.name).sort(), manifest.tools.map((t) => t.name).sort());
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'from the bundle' } }, undefined, { timeout: CALL_TIMEOUT });
    assert.notEqual(echo.isError, true, JSON.stringify(echo));
    assert.match(textOf(echo), /from the bundle/);
  } finally {
    await client.close();
  }
});
