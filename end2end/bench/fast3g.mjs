// How soon a phone on a slow network can use Activity (BENCHMARKS.md, "A release build on a
// phone"): a benchmark, never part of the test command (playwright.config.ts only runs
// end2end/tests/).
//
// It starts the RELEASE build (`scripts/build-release.sh` first) as `iris serve --demo` on a
// fresh temp database and Maildir, asks for the promo clean-up once so Activity holds a pending
// card, then for each run opens /activity in a fresh Chromium context (empty cache, new session)
// at 375 px with touch, the network throttled to Chrome's "Fast 3G" through CDP
// (`Network.emulateNetworkConditions`: 562.5 ms latency, 180,000 B/s down, 84,375 B/s up), and
// taps the card's action button every 50 ms until a tap opens a confirm dialog: the card's form
// dialog while the page is not yet live (app/src/card_form.rs: its confirm answers the card
// through a form post), or the live dialog once it is hydrated. The time is the page's own clock
// (`performance.now()`, from navigation start) when the dialog shows; each run also says which
// dialog it was and when the wasm was in. Each run then loads the page again the same way (a
// new card waiting) and taps Reject at once: the time until the card's page shows it rejected
// (through the card's form before the page is live). Prints every run and the medians.
//
//   node end2end/bench/fast3g.mjs            (from the repository root; IRIS_BENCH_RUNS=7)
//   IRIS_BENCH_TIMELINE=1 also prints each request of each run: asked, connection set-up, first
//   byte, last byte (ms from navigation start) and bytes over the wire.
import { chromium } from '@playwright/test';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const target = process.env.CARGO_TARGET_DIR ?? path.join(root, 'target');
const runs = Number(process.env.IRIS_BENCH_RUNS ?? 7);
const port = Number(process.env.IRIS_BENCH_PORT ?? 3230);
const base = `http://127.0.0.1:${port}`;
const REQUEST = 'trash the promo emails from this week';
const FAST_3G = {
  offline: false,
  latency: 562.5,
  downloadThroughput: 180_000,
  uploadThroughput: 84_375,
};
const LAUNCH = {
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
};

const binary = path.join(target, 'release', 'iris');
const site = path.join(target, 'site-release');
for (const needed of [binary, path.join(target, 'release', 'hash.txt'), site]) {
  if (!fs.existsSync(needed)) {
    console.error(`missing ${needed}: run scripts/build-release.sh first`);
    process.exit(1);
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'iris-fast3g-'));
const server = spawn(binary, ['serve', '--demo'], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'pipe'],
  env: {
    ...process.env,
    IRIS_BIND: `127.0.0.1:${port}`,
    IRIS_DATABASE_URL: `sqlite://${path.join(dir, 'iris.db')}`,
    IRIS_MAILDIR: path.join(dir, 'Maildir'),
    LEPTOS_OUTPUT_NAME: 'iris',
    LEPTOS_SITE_ROOT: site,
    LEPTOS_SITE_PKG_DIR: 'pkg',
    LEPTOS_SITE_ADDR: `127.0.0.1:${port}`,
    LEPTOS_HASH_FILES: 'true',
    LEPTOS_ENV: 'PROD',
  },
});
let serverLog = '';
server.stderr.on('data', (chunk) => {
  serverLog = (serverLog + chunk).slice(-4000);
});
const stop = () => {
  if (server.exitCode === null) server.kill('SIGTERM');
};
process.on('exit', stop);

async function waitForServer() {
  for (let i = 0; i < 300; i++) {
    try {
      const response = await fetch(`${base}/api/health`);
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    if (server.exitCode !== null) throw new Error(`server exited:\n${serverLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server did not start:\n${serverLog}`);
}

/** Unthrottled: asks in chat so that Activity shows a pending card with an action button. */
async function makePendingCard(browser) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${base}/activity`);
  const input = page.getByTestId('chat-input');
  await input.waitFor();
  for (let i = 0; i < 200 && !(await input.isEditable()); i++) await page.waitForTimeout(50);
  await input.fill(REQUEST);
  await page.getByTestId('chat-send').click();
  await page.getByTestId('chat-approval-link').first().waitFor({ timeout: 30_000 });
  await context.close();
}

/**
 * A first visit of /activity on a phone: a fresh context (empty cache, new session) at 375 ×
 * 812 px with touch, the network throttled to Fast 3G, navigated until the response starts.
 */
async function coldPhoneLoad(browser) {
  const context = await browser.newContext({
    viewport: { width: 375, height: 812 },
    deviceScaleFactor: 2,
    isMobile: true,
    hasTouch: true,
  });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', FAST_3G);
  await page.goto(`${base}/activity`, { waitUntil: 'commit', timeout: 60_000 });
  return { context, page };
}

/** One cold load of /activity at 375 px on Fast 3G: ms from navigation start to a working tap. */
async function oneRun(browser) {
  const { context, page } = await coldPhoneLoad(browser);
  const button = page.getByTestId('action-button').first();
  // Whichever confirm dialog the tap opened: the form's (not live yet) or the live one.
  const dialog = page
    .locator('[data-testid=form-dialog-confirm], [data-testid=dialog-confirm]')
    .filter({ visible: true });
  await button.waitFor({ timeout: 60_000 });
  let taps = 0;
  for (;;) {
    taps += 1;
    await button.tap({ timeout: 60_000 });
    try {
      await dialog.waitFor({ state: 'visible', timeout: 50 });
      break;
    } catch {
      if (taps > 1200) throw new Error('no tap opened the dialog within a minute');
    }
  }
  const tapWorks = await page.evaluate(() => performance.now());
  const opened = await page.evaluate(() =>
    document.querySelector('dialog[open]') ? 'form dialog' : 'live dialog',
  );
  // The wasm goes on loading after a tap the form dialog answered: wait for it, to say when.
  await page.waitForFunction(
    () => performance.getEntriesByType('resource').some((e) => e.name.endsWith('.wasm')),
    null,
    { timeout: 60_000 },
  );
  const timing = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const wasm = performance
      .getEntriesByType('resource')
      .find((e) => e.name.endsWith('.wasm'));
    return {
      domContentLoaded: nav ? nav.domContentLoadedEventEnd : NaN,
      wasmLoaded: wasm ? wasm.responseEnd : NaN,
      wasmBytes: wasm ? wasm.transferSize : NaN,
      // Each request in order: when it was asked, its connection set-up, first byte, last byte.
      timeline: [nav, ...performance.getEntriesByType('resource')]
        .filter(Boolean)
        .map((e) => ({
          name: e.name.replace(location.origin, '') || '/',
          start: e.startTime,
          connect: e.connectEnd - e.connectStart,
          requestStart: e.requestStart,
          firstByte: e.responseStart,
          end: e.responseEnd,
          bytes: e.transferSize,
        })),
    };
  });
  await context.close();
  return { ...timing, tapWorks, opened, taps };
}

/**
 * One cold load of /activity at 375 px on Fast 3G, then one tap on the first card's Reject as
 * soon as it shows: ms from navigation start until that card's page shows it rejected (before
 * the page is live the tap posts the card's form and the card's page loads again; after, the
 * live page answers in place). Leaves Activity with one card fewer.
 */
async function answerRun(browser) {
  const { context, page } = await coldPhoneLoad(browser);
  const start = await page.evaluate(() => performance.timeOrigin);
  const card = page.locator('article.card:has([data-testid=reject-button])').first();
  const reject = card.getByTestId('reject-button');
  await reject.waitFor({ timeout: 60_000 });
  const id = (await card.getAttribute('id')).replace(/^card-/, '');
  await reject.tap({ timeout: 60_000 });
  await page
    .getByTestId(`card-${id}`)
    .locator('[data-testid=outcome][data-status=rejected]')
    .waitFor({ timeout: 60_000 });
  const answered = (await page.evaluate(() => performance.timeOrigin + performance.now())) - start;
  const via = page.url().endsWith(`/activity/${id}`) ? 'card form' : 'live page';
  await context.close();
  return { answered, via };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

try {
  await waitForServer();
  const browser = await chromium.launch(LAUNCH);
  await makePendingCard(browser);
  const results = [];
  for (let i = 0; i < runs; i++) {
    const r = await oneRun(browser);
    await makePendingCard(browser);
    Object.assign(r, await answerRun(browser));
    results.push(r);
    console.log(
      `run ${i + 1}: tap works at ${r.tapWorks.toFixed(0)} ms (${r.opened})` +
        ` (DOMContentLoaded ${r.domContentLoaded.toFixed(0)} ms,` +
        ` wasm loaded ${r.wasmLoaded.toFixed(0)} ms, ${r.wasmBytes} bytes over the wire,` +
        ` ${r.taps} taps); a Reject tap answered at ${r.answered.toFixed(0)} ms (${r.via})`,
    );
    if (process.env.IRIS_BENCH_TIMELINE) {
      for (const e of r.timeline) {
        console.log(
          `    ${e.name.slice(0, 48).padEnd(48)} asked ${e.start.toFixed(0).padStart(5)}` +
            ` connect ${e.connect.toFixed(0).padStart(4)} sent ${e.requestStart.toFixed(0).padStart(5)}` +
            ` first byte ${e.firstByte.toFixed(0).padStart(5)} done ${e.end.toFixed(0).padStart(5)}` +
            ` ${String(e.bytes).padStart(7)} B`,
        );
      }
    }
  }
  await browser.close();
  console.log(
    `p50 over ${runs} runs: ${median(results.map((r) => r.tapWorks)).toFixed(0)} ms until a tap works` +
      ` (Fast 3G, 375 px, release build); ${median(results.map((r) => r.answered)).toFixed(0)} ms` +
      ` until a Reject tap has answered the card`,
  );
} finally {
  stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
