// Shared set-up for the agent-CLI tests: the CLIs installed here (pinned by
// package-lock.json), each run in a scratch HOME and working directory with
// a stand-in model, under a bound, in a process group of its own that is
// killed whatever becomes of the run (the CLI and any stdio server it
// started).
//
// Airlock's side (configs, servers, the person at the approval page) is
// the TypeScript client tests' support (tests/ts/support.js); here, a
// config whose calls wait for an approval on Airlock's page, its audit
// log, and the page's own process that outlives a stdio server.

import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { CALL_TIMEOUT, writeConfig } from '../ts/support.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const MODULES = path.join(HERE, 'node_modules');
// The Node 22 the CLIs need (package.json installs it).
export const NODE = path.join(MODULES, 'node/bin/node');
export const CLAUDE = path.join(MODULES, '@anthropic-ai/claude-code/bin/claude.exe');
export const GEMINI = path.join(MODULES, '@google/gemini-cli/bundle/gemini.js');
// The MCP Inspector CLI of tests/inspector (same pin).
export const INSPECTOR = path.resolve(HERE, '../inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

// Liveness bound on one CLI run (a start, a list, a whole scripted
// session): a loaded machine is slow, not broken.
export const RUN_TIMEOUT = 300_000;

// Every process group started here, until it ends: killed at exit.
const groups = new Set();
process.on('exit', () => {
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
});

/**
 * Run `command` with `args` in a process group of its own; resolves to
 * `{ code, stdout, stderr }` once it exits, and then kills what it left in
 * its group (a stdio server it started). Past `timeout` the group is
 * killed and the promise rejects with the command and its output so far.
 */
export function run(command, args, { env, cwd, timeout = RUN_TIMEOUT } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    groups.add(child.pid);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk; });
    child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk; });
    const killGroup = () => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is empty
      }
      groups.delete(child.pid);
    };
    const timer = setTimeout(() => {
      killGroup();
      reject(new Error(`${path.basename(command)} ${args.join(' ')} did not end in ${timeout} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeout);
    child.on('error', (error) => {
      clearTimeout(timer);
      killGroup();
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      killGroup();
      resolve({ code: code ?? signal, stdout, stderr });
    });
  });
}

/** A scratch HOME and working directory for one CLI: the user's are never touched. */
export function scratch(name) {
  const root = mkdtempSync(path.join(tmpdir(), `airlock-agents-${name}-`));
  const home = path.join(root, 'home');
  const work = path.join(root, 'work');
  mkdirSync(home);
  mkdirSync(work);
  return { root, home, work };
}

/** The environment every CLI gets: PATH with Node 22 first, the scratch HOME. */
function baseEnv(place) {
  return {
    PATH: `${path.dirname(NODE)}:${process.env.PATH}`,
    HOME: place.home,
    TMPDIR: tmpdir(),
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
  };
}

/** The command line that starts `airlock serve` on stdio for `setup`: what a user gives `mcp add`. */
export function serverCommand(bin, setup) {
  return [bin, '--config', setup.config, 'serve', '--stdio'];
}

/**
 * Claude Code in a scratch HOME against the stand-in model `model`, with
 * `extraEnv` added to its environment (and so its stdio servers').
 * Non-essential traffic (telemetry, updates) is off: the machine has no
 * network but loopback.
 */
export function claude(place, model, extraEnv = {}) {
  // Tool search (on by default) sends MCP tools to the model as deferred,
  // behind ToolSearch: the model sees none of Airlock's tools. The book's
  // setting turns it off, in the user's settings as a user would.
  mkdirSync(path.join(place.home, '.claude'), { recursive: true });
  writeFileSync(path.join(place.home, '.claude/settings.json'), JSON.stringify({ env: { ENABLE_TOOL_SEARCH: 'false' } }));
  const env = {
    ...baseEnv(place),
    ANTHROPIC_BASE_URL: model.url,
    ANTHROPIC_API_KEY: 'sk-ant-stand-in',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    ...extraEnv,
  };
  const cli = (...args) => run(CLAUDE, args, { env, cwd: place.work });
  return {
    name: 'Claude Code',
    env,
    run: cli,
    addStdio: (command) => cli('mcp', 'add', '--scope', 'user', 'airlock', '--', ...command),
    addHttp: (url) => cli('mcp', 'add', '--scope', 'user', '--transport', 'http', 'airlock', url),
    list: () => cli('mcp', 'list'),
    // MCP tools need a permission in print mode: `--allowedTools mcp__airlock`
    // allows every tool of the server (Airlock's policy decides the rest).
    prompt: (text) => cli('-p', text, '--output-format', 'json', '--allowedTools', 'mcp__airlock'),
  };
}

/**
 * Gemini CLI (Node 22) in a scratch HOME against the stand-in model: the
 * Gemini API key method with GOOGLE_GEMINI_BASE_URL pointing at it.
 */
export function gemini(place, model) {
  mkdirSync(path.join(place.home, '.gemini'), { recursive: true });
  writeFileSync(path.join(place.home, '.gemini/settings.json'), JSON.stringify({ security: { auth: { selectedType: 'gemini-api-key' } } }));
  // Gemini CLI runs MCP servers only in a folder the user trusted (as
  // `/permissions` writes it).
  writeFileSync(path.join(place.home, '.gemini/trustedFolders.json'), JSON.stringify({ [place.work]: 'TRUST_FOLDER' }));
  const env = {
    ...baseEnv(place),
    GOOGLE_GEMINI_BASE_URL: model.url,
    GEMINI_API_KEY: 'stand-in',
  };
  const cli = (...args) => run(NODE, [GEMINI, ...args], { env, cwd: place.work });
  return {
    name: 'Gemini CLI',
    env,
    // `--trust`: Gemini asks before every tool call, which print mode
    // cannot; Airlock's policy is the gate.
    addStdio: ([command, ...args]) => cli('mcp', 'add', '--scope', 'user', '--trust', 'airlock', command, '--', ...args),
    addHttp: (url) => cli('mcp', 'add', '--scope', 'user', '--trust', '--transport', 'http', 'airlock', url),
    list: () => cli('mcp', 'list'),
    prompt: (text) => cli('-p', text, '--output-format', 'json'),
  };
}

// -- approvals on Airlock's page --------------------------------------------------

/** A loopback port nobody listens on now. */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A `writeConfig` config (create_transfer asks; transfers to mallory are
 * forbidden) whose asked calls wait for a person's approval on Airlock's
 * page (`[approvals] mode = "page"`). Over HTTP the page is on the MCP
 * origin; with `listen`, a stdio server serves it on a loopback port of
 * this config's own, shared by all its servers (the page outlives a server
 * that ends while an approval waits; its origin, as links name it, is
 * `page`). The approvals, the people's passkeys and the page's lease are
 * kept in `state`; the audit log is `audit`.
 */
export async function approvalConfig({ listen }) {
  const setup = writeConfig();
  const state = path.join(setup.dir, 'state');
  const audit = path.join(setup.dir, 'audit.jsonl');
  const port = listen ? await freePort() : undefined;
  const address = listen ? `listen = "127.0.0.1:${port}"\n` : '';
  appendFileSync(setup.config, `
[approvals]
mode = "page"
${address}state_dir = ${JSON.stringify(state)}

[audit]
file = ${JSON.stringify(audit)}
`);
  return { ...setup, state, audit, page: listen ? `http://localhost:${port}` : undefined };
}

/** The outcomes of `tool`'s calls in `setup`'s audit log, in order (what ended them, not their start). */
export function auditOutcomes(setup, tool) {
  if (!existsSync(setup.audit)) return [];
  return readFileSync(setup.audit, 'utf8').split('\n').filter(Boolean).map((line) => JSON.parse(line))
    .filter((record) => record.tool === tool && record.outcome !== 'started')
    .map((record) => record.outcome);
}

/**
 * The process that serves the page after the stdio server that handed it
 * on ended (`airlock __page`, in a process group of its own), as the
 * page's lease names it; `undefined` when none does.
 */
function pageProcess(setup) {
  let holder;
  try {
    const note = readFileSync(path.join(setup.state, 'page.lock'), 'utf8');
    holder = note ? JSON.parse(note) : undefined;
  } catch {
    return undefined;
  }
  if (!holder?.handed_over) return undefined;
  try {
    // The note outlives a process killed with -9: only a live page process counts.
    const command = readFileSync(`/proc/${holder.pid}/cmdline`, 'utf8').split('\0');
    const stat = readFileSync(`/proc/${holder.pid}/stat`, 'utf8');
    if (!command.includes('__page') || /^\S+ \(.*\) Z/.test(stat)) return undefined;
  } catch {
    return undefined;
  }
  return holder.pid;
}

/**
 * Wait until a process serves `setup`'s page after the stdio server that
 * handed it on ended (`served`), or until none does: it ends by itself once
 * no approval waits for an answer. Resolves to whether that came to be
 * within the bound.
 */
export async function pageProcessRuns(setup, served) {
  const deadline = Date.now() + CALL_TIMEOUT;
  while ((pageProcess(setup) !== undefined) !== served) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return true;
}

/**
 * Stop the process that serves `setup`'s page, if one does (as when a test
 * fails while an approval waits): SIGTERM, then SIGKILL if it has not
 * ended by the bound.
 */
export async function stopPageProcess(setup) {
  const pid = pageProcess(setup);
  if (pid === undefined) return;
  process.kill(pid, 'SIGTERM');
  if (!(await pageProcessRuns(setup, false))) process.kill(pid, 'SIGKILL');
}
