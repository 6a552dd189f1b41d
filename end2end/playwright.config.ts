// Playwright for IRIS approvals: the real Debian Chromium (/usr/bin/chromium), never a
// downloaded browser (do not run `npx playwright install`), against the built `iris` server in
// `--demo` mode with a fresh database and Maildir each run.
//
// Before running: build the server (`cargo build -p server`) and the site
// (wasm + wasm-bindgen into target/site/pkg, plus style/iris.css); see the README.
import { defineConfig } from '@playwright/test';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MCP_PORT, PASSKEY_PORT } from './tests/helpers';

const PORT = 3210;
const BASE_URL = `http://127.0.0.1:${PORT}`;

// One fresh folder per run; worker processes inherit it through the environment.
const runDir =
  process.env.IRIS_E2E_RUN_DIR ?? fs.mkdtempSync(path.join(os.tmpdir(), 'iris-e2e-'));
process.env.IRIS_E2E_RUN_DIR = runDir;
fs.mkdirSync(path.join(runDir, 'passkeys'), { recursive: true });

// The third server's MCP gateway (mcp-gateway.spec.ts): the official filesystem server on a
// notes folder of this run, behind /mcp/files, with IRIS's manifest from examples/.
const mcpNotes = path.join(runDir, 'mcp', 'notes');
fs.mkdirSync(mcpNotes, { recursive: true });
fs.writeFileSync(path.join(mcpNotes, 'plan.md'), 'v1\n');
const mcpConfig = path.join(runDir, 'mcp', 'iris.toml');
fs.writeFileSync(
  mcpConfig,
  [
    '[[mcp.upstreams]]',
    'name = "files"',
    `command = [${JSON.stringify(path.resolve(__dirname, 'node_modules/.bin/mcp-server-filesystem'))}, ${JSON.stringify(fs.realpathSync(mcpNotes))}]`,
    `manifest = ${JSON.stringify(path.resolve(__dirname, '../examples/mcp/filesystem.yaml'))}`,
    '',
  ].join('\n'),
);

// Two lanes run side by side, each with a demo server and mailbox of its own, its specs one at a
// time in file order (a spec may leave cards behind for the next; zz-older-cards.spec.ts runs
// last in its lane). The second lane takes the specs that need only the main server, about half
// of the time; the first keeps the rest and the passkey and MCP servers' specs.
const LANE_B = [
  'a11y.spec.ts',
  'calendar.spec.ts',
  'files.spec.ts',
  'answered-here-and-there.spec.ts',
  'chat-reload.spec.ts',
  'dark.spec.ts',
  'devices.spec.ts',
  'dialog-keyboard.spec.ts',
  'narrow.spec.ts',
  'surfaces.spec.ts',
].map((spec) => `**/${spec}`);
const LANE_B_PORT = 3213;
const laneBDir = path.join(runDir, 'lane-b');
fs.mkdirSync(laneBDir, { recursive: true });

/** A demo server on `port` keeping its database and Maildir in `dir`. */
function demoServer(port: number, dir: string) {
  return {
    command: process.env.IRIS_E2E_SERVER_CMD ?? '../target/debug/iris serve --demo',
    url: `http://127.0.0.1:${port}/activity`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: 'pipe' as const,
    stderr: 'pipe' as const,
    env: {
      IRIS_BIND: `127.0.0.1:${port}`,
      IRIS_DATABASE_URL: `sqlite://${path.join(dir, 'iris.db')}`,
      IRIS_MAILDIR: path.join(dir, 'Maildir'),
      LEPTOS_SITE_ROOT: '../target/site',
      LEPTOS_SITE_PKG_DIR: 'pkg',
      LEPTOS_OUTPUT_NAME: 'iris',
      LEPTOS_SITE_ADDR: `127.0.0.1:${port}`,
      // Web Push on (push.spec.ts), with a push service of the spec's own on loopback.
      IRIS_VAPID_SUBJECT: 'mailto:owner@example.org',
    },
  };
}

export default defineConfig({
  testDir: './tests',
  // One worker per lane (the projects below); within a lane, one spec at a time.
  workers: 2,
  fullyParallel: false,
  retries: 0,
  timeout: 90_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  outputDir: './test-results',
  use: {
    baseURL: BASE_URL,
    viewport: { width: 1280, height: 900 },
    // A failed test keeps a screenshot of its last moment; no trace is recorded (`npx playwright
    // test --trace on` records one: actions, network, DOM snapshots). The browser is what keeps
    // the 2 cores busy here, and recording a trace of every test, passed or not, was a quarter of
    // the run: 198 s with its screencast, 167 s with DOM snapshots only, 150 s without (60
    // specs, 6 Dec 2026).
    trace: 'off',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  projects: [
    {
      name: 'chromium',
      workers: 1,
      testIgnore: LANE_B,
      metadata: { serverDir: runDir },
      use: { browserName: 'chromium', baseURL: BASE_URL },
    },
    {
      name: 'chromium-b',
      workers: 1,
      testMatch: LANE_B,
      metadata: { serverDir: laneBDir },
      use: { browserName: 'chromium', baseURL: `http://127.0.0.1:${LANE_B_PORT}` },
    },
  ],
  webServer: [
    demoServer(PORT, runDir),
    demoServer(LANE_B_PORT, laneBDir),
    // A second demo server for passkeys.spec.ts: WebAuthn needs `localhost` (browsers refuse an
    // IP address as a passkey's site), and every destructive card needs the owner's passkey.
    {
      command: process.env.IRIS_E2E_SERVER_CMD ?? '../target/debug/iris serve --demo',
      url: `http://127.0.0.1:${PASSKEY_PORT}/activity`,
      reuseExistingServer: false,
      timeout: 120_000,
      stdout: 'pipe',
      stderr: 'pipe',
      env: {
        IRIS_BIND: `127.0.0.1:${PASSKEY_PORT}`,
        IRIS_PUBLIC_URL: `http://localhost:${PASSKEY_PORT}`,
        IRIS_PASSKEY_REQUIRED: 'destructive',
        // Push on as on the first server.
        IRIS_VAPID_SUBJECT: 'mailto:owner@example.org',
        IRIS_DATABASE_URL: `sqlite://${path.join(runDir, 'passkeys', 'iris.db')}`,
        IRIS_MAILDIR: path.join(runDir, 'passkeys', 'Maildir'),
        LEPTOS_SITE_ROOT: '../target/site',
        LEPTOS_SITE_PKG_DIR: 'pkg',
        LEPTOS_OUTPUT_NAME: 'iris',
        LEPTOS_SITE_ADDR: `127.0.0.1:${PASSKEY_PORT}`,
      },
    },
    // A third demo server with the MCP gateway in front of the filesystem server.
    {
      command: process.env.IRIS_E2E_SERVER_CMD ?? '../target/debug/iris serve --demo',
      url: `http://127.0.0.1:${MCP_PORT}/activity`,
      reuseExistingServer: false,
      timeout: 120_000,
      stdout: 'pipe',
      stderr: 'pipe',
      env: {
        IRIS_BIND: `127.0.0.1:${MCP_PORT}`,
        IRIS_CONFIG: mcpConfig,
        IRIS_MCP_HOLD_SECS: '1',
        // Web Push off here (no IRIS_VAPID_SUBJECT): push.spec.ts checks that a page says so
        // without asking for the key.
        IRIS_DATABASE_URL: `sqlite://${path.join(runDir, 'mcp', 'iris.db')}`,
        IRIS_MAILDIR: path.join(runDir, 'mcp', 'Maildir'),
        LEPTOS_SITE_ROOT: '../target/site',
        LEPTOS_SITE_PKG_DIR: 'pkg',
        LEPTOS_OUTPUT_NAME: 'iris',
        LEPTOS_SITE_ADDR: `127.0.0.1:${MCP_PORT}`,
      },
    },
  ],
});
