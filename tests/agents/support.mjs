// Shared set-up for the agent-CLI tests: the CLIs installed here (pinned by
// package-lock.json), each run in a scratch HOME and working directory with
// a stand-in model, under a bound, in a process group of its own that is
// killed whatever becomes of the run (the CLI and any stdio server it
// started).
//
// Airlock's side (configs, servers) is the TypeScript client tests'
// support (tests/ts/support.js).

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
