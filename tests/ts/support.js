// Shared set-up for the end-to-end tests with the official MCP TypeScript
// SDK client: a config in a temporary directory, `airlock serve` on stdio or
// on 127.0.0.1 with an ephemeral port, and connected clients.
//
// Environment (as for tests/mcp):
//   AIRLOCK_BIN          the binary (default target/release/airlock)
//   AIRLOCK_TOOLS_DIR    the bundled tool components (default target/guests)
//   AIRLOCK_TEST_GUESTS  the test fixtures (default: test-guests beside the tools dir)
//
// Every wait is bounded; servers are stopped when a test ends, and a server
// a failed test could not stop is killed when the test process exits (run
// the files with --test-force-exit, as the Makefile does, so that a server
// left running cannot keep the process alive).

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { answerForm, enrolForm, unescapeHtml } from './softkey.js';

// For suites that share this support (tests/agents) and need the SDK client.
export { Client, StdioClientTransport };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.resolve(process.env.AIRLOCK_BIN ?? path.join(ROOT, 'target/release/airlock'));
export const TOOLS_DIR = path.resolve(process.env.AIRLOCK_TOOLS_DIR ?? path.join(ROOT, 'target/guests'));
export const TEST_GUESTS = path.resolve(process.env.AIRLOCK_TEST_GUESTS ?? path.join(TOOLS_DIR, '../test-guests'));

// Bounds on every wait, in milliseconds: liveness bounds for a loaded
// machine (a wait ends on the state it waits for, long before these).
export const START_TIMEOUT = 120_000;
export const CALL_TIMEOUT = 120_000;
// Bound on compiling every component once with an empty cache (a liveness
// bound for a slow machine, not a speed expectation).
const COMPILE_TIMEOUT = 600_000;

// Every server process started here, until it exits: killed when the test
// process exits, whatever became of the test that started it.
const servers = new Set();

/** Keep `child` (a ChildProcess) in `servers` while it runs. */
function track(child) {
  servers.add(child);
  child.once('exit', () => servers.delete(child));
  return child;
}

// Every config directory made here (writeConfig): a stdio server that ends
// while approvals wait hands its approval page to a process of its own
// (`airlock __page`), which serves it until none waits; those of these
// configs are killed when the test process exits too.
const configDirs = new Set();

/** The `airlock __page` processes of the configs in `configDirs`. */
function pageProcesses() {
  const pids = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv;
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone already
    }
    if (argv.includes('__page') && argv.some((arg) => [...configDirs].some((dir) => arg.startsWith(dir)))) {
      pids.push(Number(name));
    }
  }
  return pids;
}

process.on('exit', () => {
  for (const child of [...servers, ...pageProcesses().map((pid) => ({ kill: (signal) => process.kill(pid, signal) }))]) {
    try {
      child.kill('SIGKILL');
    } catch {
      // gone already
    }
  }
});

// Compiled components are cached across server starts.
export const CACHE_DIR = path.join(tmpdir(), `airlock-ts-tests-cache-${process.getuid?.() ?? 0}`);

for (const file of [BIN, path.join(TOOLS_DIR, 'echo.wasm'), path.join(TEST_GUESTS, 'hostile.wasm')]) {
  if (!existsSync(file)) {
    throw new Error(`missing ${file}: run \`make build\` first (or set AIRLOCK_BIN, AIRLOCK_TOOLS_DIR)`);
  }
}

// Read-only tools run; side effects ask; transfers to mallory are forbidden.
const POLICY = `
@id("read-only-tools")
permit (principal, action == Airlock::Action::"call", resource)
when { resource.side_effect == false };

@id("side-effects-ask")
@ask("transfers move money")
permit (principal, action == Airlock::Action::"call", resource)
when { resource.side_effect == true };

@id("no-mallory")
@reason("transfers to mallory are forbidden")
forbid (principal, action == Airlock::Action::"call", resource)
when { context.arguments has to && context.arguments.to == "mallory" };
`;

/**
 * A config in a fresh temporary directory: the bundled tools, the hostile
 * fixture (with `hostileTimeoutMs` and fuel out of reach, so a loop always
 * ends by its deadline) and create_transfer (side effects: asks), then
 * `extra` (more TOML tables).
 */
export function writeConfig({ hostileTimeoutMs = 500, extra = '' } = {}) {
  const dir = mkdtempSync(path.join(tmpdir(), 'airlock-ts-'));
  configDirs.add(dir);
  writeFileSync(path.join(dir, 'policy.cedar'), POLICY);
  const config = `
tool_dirs = [${JSON.stringify(TOOLS_DIR)}]

[engine]
cache_dir = ${JSON.stringify(CACHE_DIR)}

[policy]
policies = ${JSON.stringify(path.join(dir, 'policy.cedar'))}

[tools.echo]
side_effect = false
concurrency_safe = true

[tools.hostile]
component = ${JSON.stringify(path.join(TEST_GUESTS, 'hostile.wasm'))}
side_effect = false
timeout_ms = ${hostileTimeoutMs}
fuel = 1000000000000000

[tools.create_transfer]
component = ${JSON.stringify(path.join(TEST_GUESTS, 'create_transfer.wasm'))}
side_effect = true
${extra}`;
  const file = path.join(dir, 'airlock.toml');
  writeFileSync(file, config);
  return { dir, config: file };
}

/**
 * Every tool a `writeConfig` server offers once loaded: the bundled tools
 * (one per component in TOOLS_DIR, named as its file) and the two fixtures.
 */
const CONFIGURED_TOOLS = [
  ...readdirSync(TOOLS_DIR).filter((f) => f.endsWith('.wasm')).map((f) => f.slice(0, -'.wasm'.length)),
  'hostile',
  'create_transfer',
];

// Compile every component once before any server starts (as tests/mcp
// does): `airlock tools` loads them all and fills the shared cache.
execFileSync(BIN, ['--config', writeConfig().config, 'tools'], {
  env: serverEnv(),
  stdio: 'ignore',
  timeout: COMPILE_TIMEOUT,
});

/** The environment of a server: no AIRLOCK_* variables but the tools dir. */
export function serverEnv() {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AIRLOCK_')));
  env.AIRLOCK_TOOLS_DIR = TOOLS_DIR;
  env.RUST_LOG ??= 'warn';
  return env;
}

/** Start `airlock serve --http 127.0.0.1:0`; resolves to `{url, stop, stderr}`. */
export function startHttp(setup, { env = {}, args = [] } = {}) {
  const child = track(spawn(BIN, ['--config', setup.config, 'serve', '--http', '127.0.0.1:0', ...args], {
    env: { ...serverEnv(), ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  }));
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`airlock did not start in ${START_TIMEOUT} ms: ${stderr}`));
    }, START_TIMEOUT);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`airlock exited with ${code}: ${stderr}`));
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      const match = /on (http:\/\/\S+\/mcp)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        resolve({
          url: match[1],
          stderr: () => stderr,
          // SIGTERM is a graceful shutdown: the server lets open
          // connections finish (up to 5 s). Its end is watched three ways
          // ('exit', 'close', and the pid gone: Node does not always emit
          // 'exit' for a child whose listeners were replaced); a server that
          // does not stop is killed.
          stop: () => new Promise((done) => {
            let finished = false;
            const finish = () => {
              if (finished) return;
              finished = true;
              clearInterval(poll);
              clearTimeout(force);
              done();
            };
            const gone = () => {
              if (child.exitCode !== null || child.signalCode !== null) return true;
              try {
                process.kill(child.pid, 0);
                return false;
              } catch {
                return true;
              }
            };
            const poll = setInterval(() => gone() && finish(), 50);
            const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
            child.once('exit', finish);
            child.once('close', finish);
            if (gone()) return finish();
            child.kill('SIGTERM');
          }),
        });
      }
    });
  });
}

/**
 * A connected SDK client. `transport` is "stdio" or "http" (then pass a
 * running `server`). With `elicit`, the client declares the elicitation
 * capability (`elicitation`: form mode unless told) and answers every
 * request with `elicit(request)`.
 */
export async function connect(transport, setup, { server, elicit, elicitation = {} } = {}) {
  const capabilities = elicit ? { elicitation } : {};
  const client = new Client({ name: 'airlock-ts-tests', version: '0' }, { capabilities });
  const asked = [];
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return elicit(request);
    });
  }
  const link = transport === 'stdio'
    ? new StdioClientTransport({
      command: BIN,
      args: ['--config', setup.config, 'serve', '--stdio'],
      env: serverEnv(),
      stderr: 'pipe',
    })
    : new StreamableHTTPClientTransport(new URL(server.url));
  // A connect or a list that fails (or times out on a loaded machine)
  // closes the client, and with it a stdio server: the caller never got a
  // client to close.
  try {
    await client.connect(link, { timeout: START_TIMEOUT });
    if (link instanceof StdioClientTransport) trackStdio(link);
    await untilLoaded(client);
  } catch (error) {
    await client.close().catch(() => {});
    throw error;
  }
  return { client, asked, close: () => client.close() };
}

/**
 * Track the server process of a connected stdio transport (the SDK keeps
 * it private; its pid is public), so that it is killed at exit even if the
 * test never closes its client.
 */
export function trackStdio(transport) {
  const pid = transport.pid;
  if (pid == null) return;
  const handle = { kill: (signal) => process.kill(pid, signal), once: () => {} };
  servers.add(handle);
  transport.onclose = ((previous) => () => {
    servers.delete(handle);
    previous?.();
  })(transport.onclose);
}

/**
 * Wait until the server lists every configured tool. `serve` loads its
 * components in the background; the tests here are about calls, not about
 * start-up (startup.test.js is), so they begin once all are loaded.
 */
async function untilLoaded(client) {
  const deadline = Date.now() + COMPILE_TIMEOUT;
  for (;;) {
    // Each list may take as long as what is left of the overall bound: a
    // start on a loaded machine is slow, not broken.
    const timeout = Math.max(CALL_TIMEOUT, deadline - Date.now());
    const { tools } = await client.listTools(undefined, { timeout });
    const listed = new Set(tools.map((t) => t.name));
    const missing = CONFIGURED_TOOLS.filter((name) => !listed.has(name));
    if (missing.length === 0) return;
    if (Date.now() > deadline) throw new Error(`the server never listed ${missing.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The text of a result's first content block. */
export function textOf(result) {
  const [first] = result.content ?? [];
  if (!first || first.type !== 'text') throw new Error(`no text content: ${JSON.stringify(result)}`);
  return first.text;
}

/** The error kind Airlock puts in an error result's `_meta`. */
export function kindOf(result) {
  return result._meta?.['airlock/kind'];
}

// -- the person at the approval page ------------------------------------------

// One passkey per (config, principal): enrolled the first time it is needed,
// through the operator's one-time link (`airlock approvals enroll`).
const KEYS = new Map();

async function fetchText(url, { form, origin } = {}) {
  const init = { signal: AbortSignal.timeout(CALL_TIMEOUT), redirect: 'manual' };
  if (form) {
    init.method = 'POST';
    init.headers = { Origin: origin, 'Content-Type': 'application/x-www-form-urlencoded' };
    init.body = new URLSearchParams(form);
  }
  const response = await fetch(url, init);
  return { status: response.status, text: await response.text() };
}

/** `principal`'s passkey for `setup`'s server at `origin`, enrolled the first time. */
async function keyOf(setup, origin, principal) {
  const known = KEYS.get(`${setup.config}\0${principal}`);
  if (known) return known;
  const out = execFileSync(BIN, ['--config', setup.config, 'approvals', 'enroll', principal, '--url', origin], {
    env: serverEnv(),
    encoding: 'utf8',
    timeout: CALL_TIMEOUT,
  });
  const link = /http:\/\/\S+\/approvals\/enroll\/\S+/.exec(out)?.[0];
  assert.ok(link, out);
  const page = await fetchText(link);
  assert.equal(page.status, 200, page.text);
  const { key, form } = enrolForm(page.text, origin);
  const added = await fetchText(link, { form, origin });
  assert.equal(added.status, 200, added.text);
  assert.match(added.text, /Passkey added/);
  KEYS.set(`${setup.config}\0${principal}`, key);
  return key;
}

/**
 * What a person does at the page: open the link, read the card, press
 * Approve or Decline, and let their passkey answer (a software one, see
 * softkey.js; `principal`'s first is enrolled through the operator's
 * one-time link). Returns the card shown. The tests' calls act for `local`
 * (stdio, and HTTP without a token).
 */
export async function answerOnPage(setup, link, decision, principal = 'local') {
  const { origin } = new URL(link);
  const key = await keyOf(setup, origin, principal);
  const page = await fetchText(link);
  assert.equal(page.status, 200, page.text);
  const card = /id="card">(.*?)<\/pre>/s.exec(page.text);
  assert.ok(card, page.text);
  const answered = await fetchText(link.split('?')[0], { form: answerForm(page.text, decision, key, origin), origin });
  assert.equal(answered.status, 200, answered.text);
  assert.match(answered.text, decision === 'approve' ? /You approved this call/ : /You declined this call/);
  return unescapeHtml(card[1]);
}

/** The page's link in a result's text. */
export function linkIn(result) {
  return linkInText(textOf(result));
}

/**
 * The page's link in a text (a result's, or what a model was handed, which
 * may quote the result as JSON: a link holds no backslash).
 */
export function linkInText(text) {
  const match = /https?:\/\/[^\s"'<>)\]\\]+\/approvals\/[^\s"'<>)\]\\]+/.exec(text);
  assert.ok(match, `no approval link in: ${text}`);
  return match[0];
}

// -- the wire, without the SDK (streamable HTTP) ------------------------------

export const ACCEPT_HEADERS = {
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
};

/** The per-request `_meta` of a 2026-07-28 request (no initialize). */
export function modernMeta(capabilities = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

/**
 * Read a response that is JSON or an event stream to its end: the JSON-RPC
 * messages in order, with the SSE event ids where there are any.
 */
export async function readMessages(response) {
  const type = response.headers.get('content-type') ?? '';
  const text = await response.text();
  if (!type.startsWith('text/event-stream')) {
    return text ? [{ id: undefined, message: JSON.parse(text) }] : [];
  }
  return parseEvents(text);
}

/** Parse SSE text into `{id, message}` (events without data are skipped). */
export function parseEvents(text) {
  const events = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    let id;
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (data.length && data.join('').trim()) events.push({ id, message: JSON.parse(data.join('\n')) });
  }
  return events;
}

/**
 * Read an event stream until `until(event)` holds; resolves to the events so
 * far and the reader (for reading on). Bounded by `CALL_TIMEOUT`.
 */
export async function readUntil(response, until) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const seen = [];
  const deadline = Date.now() + CALL_TIMEOUT;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    const cut = buffer.lastIndexOf('\n\n');
    if (cut < 0) continue;
    seen.push(...parseEvents(buffer.slice(0, cut)));
    buffer = buffer.slice(cut + 2);
    if (seen.some(until)) return { events: seen, reader };
  }
  throw new Error(`the stream ended or timed out before the expected event: ${JSON.stringify(seen)}`);
}

/** Read the rest of a stream from `reader`; bounded by `CALL_TIMEOUT`. */
export async function readRest(reader) {
  let text = '';
  const timer = setTimeout(() => reader.cancel(), CALL_TIMEOUT);
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
    }
  } finally {
    clearTimeout(timer);
  }
  return parseEvents(text);
}
