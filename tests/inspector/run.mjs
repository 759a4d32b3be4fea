// The MCP Inspector CLI's strict tool-schema validation
// (@modelcontextprotocol/inspector, pinned in package.json: `--cli --method
// tools/list --strict`, which reports each portability problem of a tool's
// schemas and exits 6 on any error) against `airlock serve --stdio` with
// the bundled tools. Every bundled tool must be listed and no error
// reported; warnings are printed.
//
// Run with the Node 22 that package.json installs (the Inspector needs
// Node >= 22.19):
//
//   AIRLOCK_BIN=target/release/airlock AIRLOCK_TOOLS_DIR=target/guests \
//     tests/inspector/node_modules/node/bin/node tests/inspector/run.mjs

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const BIN = path.resolve(process.env.AIRLOCK_BIN ?? path.join(ROOT, 'target/release/airlock'));
const TOOLS_DIR = path.resolve(process.env.AIRLOCK_TOOLS_DIR ?? path.join(ROOT, 'target/guests'));
const INSPECTOR = path.join(HERE, 'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');
const BUNDLED = ['echo', 'read_file', 'list_dir', 'write_file', 'search_files', 'json_query', 'http_fetch', 'chart', 'run_js', 'run_python'];
// A cold cache compiles run_python first (about 30 s on two cores).
const TIMEOUT_MS = 300_000;

const env = { ...process.env, AIRLOCK_TOOLS_DIR: TOOLS_DIR };
delete env.AIRLOCK_CONFIG;
const serverEnv = ['AIRLOCK_TOOLS_DIR', 'AIRLOCK_CACHE_DIR'].filter((k) => env[k]).flatMap((k) => ['-e', `${k}=${env[k]}`]);

// Compile (or find in the cache) every tool first, so that the server's
// tools/list, which waits only briefly for tools still loading, lists all.
const warm = spawnSync(BIN, ['tools'], { env, encoding: 'utf8', timeout: TIMEOUT_MS });
if (warm.status !== 0) {
  console.error(`airlock tools failed (${warm.status}):\n${warm.stderr}`);
  process.exit(1);
}

// The Inspector keeps a catalog of servers and settings under HOME: a
// scratch HOME keeps the user's untouched.
const scratch = mkdtempSync(path.join(os.tmpdir(), 'airlock-inspector-'));
let failed = false;
try {
  const run = spawnSync(
    process.execPath,
    [INSPECTOR, '--cli', '--method', 'tools/list', '--strict', ...serverEnv, BIN, 'serve', '--stdio'],
    { env: { ...env, HOME: scratch, MCP_CATALOG_PATH: path.join(scratch, 'mcp.json') }, cwd: scratch, encoding: 'utf8', timeout: TIMEOUT_MS },
  );
  const report = run.stderr.trim();
  if (run.status !== 0) {
    console.error(`the Inspector's strict validation failed (exit ${run.status ?? run.signal}):\n${report}\n${run.stdout}`);
    failed = true;
  } else {
    const names = JSON.parse(run.stdout).tools.map((tool) => tool.name);
    const missing = BUNDLED.filter((name) => !names.includes(name));
    if (missing.length > 0) {
      console.error(`tools/list lacks ${missing.join(', ')}: ${names.join(', ')}`);
      failed = true;
    } else {
      // Warnings (nullable type unions, untyped `result` values) are the
      // Inspector's advice, not errors: the count is enough here.
      console.log(`MCP Inspector --strict: ${names.length} tools; ${report.split('\n').pop()}`);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
