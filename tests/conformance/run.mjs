// The official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in package.json) against `airlock serve --http`, for every protocol
// revision the suite covers.
//
// Run with the Node 22 that package.json installs (the suite needs Node >= 22):
//
//   AIRLOCK_BIN=target/release/airlock AIRLOCK_TOOLS_DIR=target/guests \
//     tests/conformance/node_modules/node/bin/node tests/conformance/run.mjs
//
// Every scenario must pass except those listed, each with its reason, in
// not-applicable/<revision>.yml (the suite's "expected failures" baseline: a
// listed scenario that starts passing fails the run too, so the lists stay
// true). Results (checks.json per scenario, the suite's log per revision)
// go to tests/conformance/results/.

import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const BIN = path.resolve(process.env.AIRLOCK_BIN ?? path.join(ROOT, 'target/release/airlock'));
const TOOLS_DIR = path.resolve(process.env.AIRLOCK_TOOLS_DIR ?? path.join(ROOT, 'target/guests'));
const TEST_GUESTS = path.resolve(process.env.AIRLOCK_TEST_GUESTS ?? path.join(TOOLS_DIR, '../test-guests'));
const SUITE = path.join(HERE, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
const RESULTS = path.join(HERE, 'results');
// The server may compile components first when the cache is cold.
const START_TIMEOUT_MS = 300_000;
// Bound on one revision's run (the suite bounds each scenario itself).
const RUN_TIMEOUT_MS = 600_000;

// The dated revisions up to 2025-06-18 have no frozen requirement set: every
// scenario the suite tags with the revision runs. 2025-11-25 and 2026-07-28
// run exactly what their frozen requirement sets name (the suite runs each
// at its own wire: the initialize handshake, or per-request _meta).
const RUNS = [
  { revision: '2025-03-26', args: ['--suite', 'all', '--spec-version', '2025-03-26'] },
  { revision: '2025-06-18', args: ['--suite', 'all', '--spec-version', '2025-06-18'] },
  { revision: '2025-11-25', args: ['--requirements', '2025-11-25'] },
  { revision: '2026-07-28', args: ['--requirements', '2026-07-28'] },
];

// The suite calls some tools by name; these fixtures (tests/guests/conformance_*)
// are those its scenarios can meaningfully check against a tools-only host,
// each with the lines of its `[tools.NAME]` table. Every other scenario that
// needs a fixture of its own is listed, with the reason, in not-applicable/.
const FIXTURES = [
  ['test_simple_text', 'conformance_text', 'side_effect = false'],
  ['test_error_handling', 'conformance_error', 'side_effect = false'],
  // Side effects: the default policy asks, so the call is "input required".
  ['test_input_required_result_tampered_state', 'conformance_state', 'side_effect = true'],
  // A schema with JSON Schema 2020-12 keywords the host must serve kept
  // (json-schema-2020-12), and a parameter mirrored into an Mcp-Param
  // header that the server must check against the body
  // (http-custom-header-server-validation).
  ['json_schema_2020_12_tool', 'conformance_schema', 'side_effect = false'],
  ['test_param_headers', 'conformance_headers', 'side_effect = false'],
  // Content blocks and progress (contract 0.3.0).
  ['test_image_content', 'conformance_image', 'side_effect = false'],
  ['test_audio_content', 'conformance_audio', 'side_effect = false'],
  ['test_embedded_resource', 'conformance_resource', 'side_effect = false'],
  ['test_multiple_content_types', 'conformance_mixed', 'side_effect = false'],
  ['test_tool_with_progress', 'conformance_progress', 'side_effect = false'],
  // Log lines to the client: only a tool whose operator turned it on.
  ['test_tool_with_logging', 'conformance_logging', 'side_effect = false\nclient_log = true'],
  // The tasks extension's (the tasks-* scenarios). Tools whose calls run
  // as tasks run beside each other (concurrency_safe), so that a long one
  // does not hold up the next scenario's calls.
  ['greet', 'conformance_greet', 'side_effect = false'],
  ['slow_compute', 'conformance_slow', 'side_effect = false\nconcurrency_safe = true\ntask = "optional"\ntimeout_ms = 5000\ntask_timeout_ms = 120000'],
  ['failing_job', 'conformance_failing', 'side_effect = false\nconcurrency_safe = true\ntask = "required"'],
  ['protocol_error_job', 'conformance_crash', 'side_effect = false\nconcurrency_safe = true\ntask = "optional"'],
  // Side effects: the default policy asks, so the task waits for input.
  ['confirm_delete', 'conformance_confirm', 'side_effect = true\nconcurrency_safe = true\ntask = "optional"'],
];

for (const file of [BIN, SUITE, path.join(TOOLS_DIR, 'echo.wasm'), ...FIXTURES.map(([, crate]) => path.join(TEST_GUESTS, `${crate}.wasm`))]) {
  if (!existsSync(file)) {
    console.error(`missing ${file}: run \`make build\` and \`npm ci\` in tests/conformance first`);
    process.exit(2);
  }
}
if (Number(process.versions.node.split('.')[0]) < 22) {
  console.error(`the conformance suite needs Node >= 22, this is ${process.version}: run it with tests/conformance/node_modules/node/bin/node`);
  process.exit(2);
}

/** Start `airlock serve --http 127.0.0.1:0` with the bundled tools; resolves to its URL. */
function startServer(log) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AIRLOCK_') || k === 'AIRLOCK_CACHE_DIR'));
  env.AIRLOCK_TOOLS_DIR = TOOLS_DIR;
  env.RUST_LOG ??= 'warn';
  const config = path.join(RESULTS, 'airlock.toml');
  const fixtures = FIXTURES.map(([name, crate, settings]) => (
    `[tools.${name}]\ncomponent = ${JSON.stringify(path.join(TEST_GUESTS, `${crate}.wasm`))}\n${settings}\n`
  ));
  writeFileSync(config, [`tool_dirs = [${JSON.stringify(TOOLS_DIR)}]\n`, ...fixtures].join('\n'));
  const child = spawn(BIN, ['--config', config, 'serve', '--http', '127.0.0.1:0'], { cwd: RESULTS, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const url = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`airlock did not start in ${START_TIMEOUT_MS} ms: ${stderr}`)), START_TIMEOUT_MS);
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`airlock exited with ${code}: ${stderr}`)); });
    child.stderr.on('data', (chunk) => {
      log.write(chunk);
      stderr += chunk;
      const match = /on (http:\/\/\S+\/mcp)/.exec(stderr);
      if (match) { clearTimeout(timer); resolve(match[1]); }
    });
  });
  return { child, url };
}

/** Run the suite for one revision; resolves to its exit code and summary lines. */
function runSuite(url, { revision, args }) {
  const out = path.join(RESULTS, revision);
  mkdirSync(out, { recursive: true });
  const log = createWriteStream(path.join(RESULTS, `${revision}.log`));
  const baseline = path.join(HERE, 'not-applicable', `${revision}.yml`);
  const child = spawn(process.execPath, [
    SUITE, 'server', '--url', url, ...args, '--expected-failures', baseline, '--output-dir', out,
  ], { cwd: HERE, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (chunk) => { text += chunk; log.write(chunk); });
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      log.end();
      const summary = text.includes('=== SUMMARY ===') ? text.slice(text.indexOf('=== SUMMARY ===')) : text.slice(-4000);
      resolve({ code: code ?? 1, summary });
    });
  });
}

// The suite does not score extension scenarios (those of the tasks
// extension, `tasks-*`) nor the scenarios it marks pending
// (`json-schema-2020-12`, `http-custom-header-server-validation`) against
// the baseline; they are held to it here the same way: each failing check
// (FAILURE or WARNING) must be listed, as its scenario or as
// `scenario:check`, and each listed one must still fail.
const EXTENSION_SCENARIOS = /^(tasks-|json-schema-2020-12$|http-custom-header-server-validation$)/;

/** The entries of a not-applicable file: `scenario` or `scenario:check`. */
function baseline(revision) {
  const text = readFileSync(path.join(HERE, 'not-applicable', `${revision}.yml`), 'utf8');
  return text.split('\n').map((line) => /^\s*-\s+(\S+)\s*$/.exec(line)?.[1]).filter(Boolean);
}

/** Extension scenarios' failures against the baseline: what is unlisted, and what is listed but passes. */
function checkExtensions(revision) {
  const listed = baseline(revision).filter((entry) => EXTENSION_SCENARIOS.test(entry.split(":")[0]));
  const dir = path.join(RESULTS, revision);
  const unexpected = [];
  const failing = new Set();
  const seen = new Set();
  for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(entry)?.[1];
    if (!scenario || !EXTENSION_SCENARIOS.test(scenario)) continue;
    seen.add(scenario);
    const checks = JSON.parse(readFileSync(path.join(dir, entry, 'checks.json'), 'utf8'));
    for (const check of checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING')) {
      failing.add(scenario);
      failing.add(`${scenario}:${check.id}`);
      if (!listed.includes(scenario) && !listed.includes(`${scenario}:${check.id}`)) unexpected.push(`${scenario}:${check.id}`);
    }
  }
  const stale = listed.filter((entry) => seen.has(entry.split(':')[0]) && !failing.has(entry));
  return { unexpected, stale, scenarios: seen.size };
}

rmSync(RESULTS, { recursive: true, force: true });
mkdirSync(RESULTS, { recursive: true });
const serverLog = createWriteStream(path.join(RESULTS, 'server.log'));
const server = startServer(serverLog);
let passed = 0;
let failed = 0;
try {
  const url = await server.url;
  for (const run of RUNS) {
    const { code, summary } = await runSuite(url, run);
    console.log(`\n##### MCP conformance, revision ${run.revision} (${run.args.join(' ')})`);
    console.log(summary.trim());
    const extensions = checkExtensions(run.revision);
    if (extensions.scenarios > 0) {
      console.log(`extension and pending scenarios: ${extensions.scenarios} run`);
      for (const check of extensions.unexpected) console.log(`  ✗ not listed, fails: ${check}`);
      for (const entry of extensions.stale) console.log(`  ✓ listed, passes (remove it from the list): ${entry}`);
    }
    if (code === 0 && extensions.unexpected.length === 0 && extensions.stale.length === 0) {
      passed += 1;
      console.log(`revision ${run.revision}: ok (every failure is listed in not-applicable/${run.revision}.yml)`);
    } else {
      failed += 1;
      console.log(`revision ${run.revision}: FAILED (exit ${code}, extension scenarios above): an unlisted failure, or a listed scenario that now passes; see tests/conformance/results/${run.revision}.log`);
    }
  }
} catch (err) {
  console.error(String(err));
  failed += 1;
} finally {
  server.child.kill('SIGTERM');
}
// One line CI reads: revisions whose run passed, and failed.
console.log(`\nconformance: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
