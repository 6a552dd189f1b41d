// Shared steps for the approval specs: ask in chat, follow the halt link, take screenshots.
import { expect, test, type Locator, type Page } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** What the owner asks in both specs (the demo model halts on `trash_email`). */
export const REQUEST = 'trash the promo emails from this week';

/** This week's demo promotions (older promos and order mail must not be on the card). */
export const WEEK_PROMOS = [
  '20% off winter jackets',
  'Black Friday prices',
  'Flash sale',
  '40% off garden furniture',
  '2-for-1 cinema tickets',
];
export const NOT_ON_CARD = ['Autumn clearance', 'has shipped', 'smart home starter kits'];

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 375, height: 812 };

/** The port of the second demo server, the one passkeys.spec.ts uses (playwright.config.ts). */
export const PASSKEY_PORT = 3211;
/** Its address: WebAuthn needs `localhost`, never an IP address. */
export const PASSKEY_URL = `http://localhost:${PASSKEY_PORT}`;

/** The port of the third demo server, the one with the MCP gateway (mcp-gateway.spec.ts). */
export const MCP_PORT = 3212;
/** Its address. */
export const MCP_URL = `http://127.0.0.1:${MCP_PORT}`;

const SHOTS = path.join(__dirname, '..', 'screenshots');

/**
 * The folder of the demo server this test's lane talks to (playwright.config.ts: each lane has
 * a server of its own, with its `iris.db` and `Maildir` here). Call it inside a test.
 */
export function serverDir(): string {
  return test.info().project.metadata.serverDir as string;
}

/** The database URL of this test's lane's server, for the CLI (`iris devices add`, `iris pair`). */
export function serverDatabaseUrl(): string {
  return `sqlite://${path.join(serverDir(), 'iris.db')}`;
}

/** Collects the page's console errors and warnings (hydration mismatches, panics). */
export function watchConsole(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') {
      problems.push(`${msg.type()}: ${msg.text()}`);
    }
  });
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  return problems;
}

/** Saves a screenshot (of an element, or the viewport) under end2end/screenshots/. */
export async function shot(target: Page | Locator, name: string, fullPage = false): Promise<void> {
  fs.mkdirSync(SHOTS, { recursive: true });
  const file = path.join(SHOTS, `${name}.png`);
  if (fullPage && 'goto' in target) {
    await target.screenshot({ path: file, fullPage: true });
  } else {
    await target.screenshot({ path: file });
  }
}

/** Screenshots at desktop width and at 375 px, then back to desktop. */
export async function shotBothWidths(
  page: Page,
  target: () => Page | Locator,
  name: string,
): Promise<void> {
  await page.setViewportSize(DESKTOP);
  await shot(target(), `${name}-desktop`);
  await page.setViewportSize(PHONE);
  await shot(target(), `${name}-phone`);
  await page.setViewportSize(DESKTOP);
}

/** Whole-page screenshots at desktop width and at 375 px, then back to desktop. */
export async function pageShots(page: Page, name: string): Promise<void> {
  await page.setViewportSize(DESKTOP);
  await shot(page, `${name}-desktop`, true);
  await page.setViewportSize(PHONE);
  await shot(page, `${name}-phone`, true);
  await page.setViewportSize(DESKTOP);
}

/**
 * Opens `url` and waits until the page is live: hydrated, asking for its live stream
 * (`/api/events`). Before that a card's buttons work as its HTML form (a tap posts and loads
 * the card's page again), so a spec about the live page waits for this first.
 */
export async function openLive(page: Page, url: string): Promise<void> {
  await untilLive(page, () => page.goto(url));
}

/** Runs `go` (a navigation) and waits until the page it loads asks for its live stream. */
async function untilLive(page: Page, go: () => Promise<unknown>): Promise<void> {
  // The request, not its answer: a spec may hold the stream back (page.route).
  const stream = page.waitForRequest((r) => r.url().endsWith('/api/events'));
  await go();
  await stream;
}

/**
 * Follows `link` (pages are separate documents: the card's page loads from the server) and
 * waits until the new page is live, as [`openLive`] does.
 */
export async function followLive(page: Page, link: Locator): Promise<void> {
  await untilLive(page, () => link.click());
}

/**
 * Opens Activity, sends `request` in the chat, follows the link of the card it halts on (the
 * newest) and returns the approval id and its card.
 */
export async function askAndFollow(
  page: Page,
  request: string,
): Promise<{ id: string; card: Locator }> {
  await page.goto('/activity');
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill(request);
  await page.getByTestId('chat-send').click();
  const link = page.getByTestId('chat-approval-link').last();
  await expect(link).toBeVisible();
  const id = (await link.getAttribute('href'))!.split('/').pop()!;
  await followLive(page, link);
  return { id, card: page.getByTestId(`card-${id}`) };
}

/**
 * Opens Activity, asks for the promo clean-up, follows the halt message's link and returns the
 * approval id and its card.
 */
export async function askAndOpenCard(page: Page): Promise<{ id: string; card: Locator }> {
  await page.goto('/activity');
  const input = page.getByTestId('chat-input');
  // Editable only once the page is hydrated.
  await expect(input).toBeEditable();
  await input.fill(REQUEST);
  // The card is the one this turn made, read from the chat's own answer: the conversation's
  // earlier lines (an earlier ask's halt among them) may still be loading, so "the last halt
  // line" could name an earlier card.
  const answered = page.waitForResponse(
    (r) => r.url().includes('/ui/send_chat') && r.request().method() === 'POST',
  );
  await page.getByTestId('chat-send').click();
  const turn = await (await answered).json();
  const id: string = turn.approval_id;
  expect(id).toMatch(/^[A-Za-z0-9-]+$/);

  const ownerLine = page.getByTestId('chat-line').filter({ hasText: REQUEST }).last();
  await expect(ownerLine).toHaveAttribute('data-role', 'owner');

  const link = page.locator(`[data-testid="chat-approval-link"][href="/activity/${id}"]`);
  const halt = page.getByTestId('chat-line').filter({ has: link });
  await expect(halt).toContainText('I need your approval to trash');
  await expect(halt).toContainText('Nothing has been changed yet');
  // Amber while its card waits.
  await expect(halt).toHaveClass(/\bhalt\b/);

  await followLive(page, link);
  await expect(page).toHaveURL(new RegExp(`/activity/${id}$`));
  const card = page.getByTestId(`card-${id}`);
  await expect(card).toBeVisible();
  await expect(card).toHaveClass(/focused/);
  await expect(card).toBeInViewport();
  return { id, card };
}

/** The card says plainly what it will do: red, "Deletes data", the week's promos, undo, request. */
export async function expectDestructiveCard(card: Locator): Promise<void> {
  await expect(card).toHaveClass(/card-destructive/);
  await expect(card.getByTestId('badge-deletes')).toHaveText('Deletes data');
  const lines = card.getByTestId('card-lines').locator('li');
  await expect(lines).toHaveCount(WEEK_PROMOS.length);
  for (const promo of WEEK_PROMOS) {
    await expect(card.getByTestId('card-lines')).toContainText(promo);
  }
  for (const other of NOT_ON_CARD) {
    await expect(card.getByTestId('card-lines')).not.toContainText(other);
  }
  await expect(card.getByTestId('card-undo')).toContainText('Trash');
  await expect(card.getByTestId('card-asked')).toContainText(`You asked: ${REQUEST}`);
  await expect(card.getByTestId('action-button')).toHaveText(
    `Trash ${WEEK_PROMOS.length} emails`,
  );
  await expect(card.getByTestId('reject-button')).toBeEnabled();
}

/** Opens the exact-call toggle: the tool and its canonical arguments. */
export async function expectExactCall(card: Locator): Promise<void> {
  const call = card.getByTestId('exact-call');
  await expect(call).toBeHidden();
  await card.getByTestId('exact-call-toggle').click();
  await expect(call).toBeVisible();
  await expect(call).toContainText('trash_email');
  await expect(call).toContainText('"ids"');
}

// ---- the CLI, undo, and colours (issue 5: the card in the browser) ----

/** The built `iris` binary the specs drive as another surface (the CLI). */
export const IRIS_BIN =
  process.env.IRIS_E2E_IRIS_BIN ?? path.resolve(__dirname, '..', '..', 'target', 'debug', 'iris');

/** Runs `iris ARGS` with extra environment and returns what it printed. */
export function irisCli(args: string[], env: Record<string, string>): string {
  return execFileSync(IRIS_BIN, args, { env: { ...process.env, ...env }, encoding: 'utf8' });
}

/**
 * Adds a control or read device to the test server's database (`iris devices add`, DESIGN §7)
 * and returns its name and token (the last line printed). Device names are unique, so the name
 * is `prefix` plus a suffix of its own (a spec may run more than once per server); the card's
 * outcome names it.
 */
export function addDevice(
  prefix: string,
  scope: 'read' | 'control',
): { name: string; token: string } {
  const name = `${prefix}-${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const added = irisCli(['devices', 'add', '--name', name, '--scope', scope], {
    IRIS_DATABASE_URL: serverDatabaseUrl(),
  });
  return { name, token: added.trim().split('\n').pop()!.trim() };
}

/** Says "undo that" in the chat and waits for the week's promos to be restored. */
export async function undoInChat(page: Page): Promise<void> {
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill('undo that');
  await page.getByTestId('chat-send').click();
  await expect(page.getByTestId('chat-line').last()).toContainText(
    `Restored ${WEEK_PROMOS.length} emails`,
  );
}

/** One element's text colour, the background it is drawn on, and their WCAG contrast. */
export interface TextContrast {
  text: string;
  color: string;
  background: string;
  ratio: number;
}

/**
 * Runs `read` until it gives an answer (not `null`), for at most 10 s. The Activity page is
 * drawn anew on every live event, so an element found a moment ago may have left the
 * document by the time it is read (its computed style is then empty); such a read answers
 * `null` and is tried again on the redrawn page.
 */
async function readAttached<T>(read: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answer = await read();
    if (answer !== null) return answer;
    if (Date.now() > deadline) throw new Error('the element kept leaving the page while read');
  }
}

/**
 * Measures every element `target` matches: its computed text colour against the colour
 * actually behind it (the nearest backgrounds, blended up to the first opaque one; the
 * page's canvas when none is). Gradients are not read: a rule that paints one also sets a
 * background colour (style/iris.css).
 */
export async function textContrast(target: Locator): Promise<TextContrast[]> {
  return readAttached(() => target.evaluateAll((elements) => {
    if (elements.some((el) => !el.isConnected)) return null;
    type Rgba = [number, number, number, number];
    const parse = (css: string): Rgba => {
      const m = css.match(/rgba?\(([^)]+)\)/);
      if (!m) return [0, 0, 0, 0];
      const p = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const over = (top: Rgba, under: Rgba): Rgba => {
      const a = top[3] + under[3] * (1 - top[3]);
      if (a === 0) return [0, 0, 0, 0];
      const mix = (i: number) => (top[i] * top[3] + under[i] * under[3] * (1 - top[3])) / a;
      return [mix(0), mix(1), mix(2), a];
    };
    const luminance = (c: Rgba) => {
      const lin = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
    };
    const dark = window.matchMedia('(prefers-color-scheme: dark)').matches;
    const canvas: Rgba = dark ? [18, 18, 18, 1] : [255, 255, 255, 1];
    return elements.map((el) => {
      const layers: Rgba[] = [];
      for (let node: Element | null = el; node; node = node.parentElement) {
        const bg = parse(getComputedStyle(node).backgroundColor);
        if (bg[3] > 0) layers.push(bg);
        if (bg[3] >= 1) break;
      }
      let ground: Rgba = canvas;
      for (const layer of layers.reverse()) ground = over(layer, ground);
      const color = over(parse(getComputedStyle(el).color), ground);
      const [l1, l2] = [luminance(color), luminance(ground)];
      const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
      const rgb = (c: Rgba) => `rgb(${c.slice(0, 3).map(Math.round).join(', ')})`;
      return {
        text: (el.textContent ?? '').trim().slice(0, 60),
        color: rgb(color),
        background: rgb(ground),
        ratio: Math.round(ratio * 100) / 100,
      };
    });
  }));
}

/** Every element `target` matches (at least one) reads at WCAG AA: contrast 4.5:1 or more. */
export async function expectReadable(target: Locator): Promise<TextContrast[]> {
  const measured = await textContrast(target);
  expect(measured.length, `nothing matched ${target}`).toBeGreaterThan(0);
  const poor = measured.filter((m) => m.ratio < 4.5);
  expect(poor, `text under 4.5:1 in ${target}`).toEqual([]);
  return measured;
}

/** One computed style property (e.g. `borderLeftColor`) of the first element `target` matches. */
export async function styleOf(
  target: Locator,
  property: 'backgroundColor' | 'borderLeftColor' | 'color',
): Promise<string> {
  return readAttached(() =>
    target
      .first()
      .evaluate((el, p) => (el.isConnected ? getComputedStyle(el)[p] : null), property),
  );
}

/** The computed background colour of the first element `target` matches. */
export async function backgroundOf(target: Locator): Promise<string> {
  return styleOf(target, 'backgroundColor');
}

/**
 * `iris pair --scope SCOPE` against the database of this test's lane's server: the one-time
 * link it prints (its last line), made on that server's address.
 */
export function pairingLink(scope: 'read' | 'control'): string {
  const out: string = execFileSync(IRIS_BIN, ['pair', '--scope', scope], {
    env: {
      ...process.env,
      IRIS_DATABASE_URL: serverDatabaseUrl(),
      IRIS_BIND: new URL(test.info().project.use.baseURL!).host,
    },
    encoding: 'utf8',
  });
  return out.trim().split('\n').pop()!.trim();
}

/** Opens a pairing `link` in `page`, names the device `name` and pairs; waits for Activity. */
export async function pairThrough(page: Page, link: string, name: string): Promise<void> {
  await page.goto(link);
  await expect(page.getByTestId('pair-page')).toBeVisible();
  await page.getByLabel('Name this device').fill(name);
  await page.getByRole('button', { name: 'Pair this browser' }).click();
  await page.waitForURL('**/activity');
  await expect(page.getByTestId('viewer')).toContainText(name);
}

/**
 * Screenshots of the card `card-{id}` at 1280, 375 and 320 px, light and dark, named
 * `{name}-{width}-{scheme}`; at each width the page has no sideways scroll. Ends at 1280 px,
 * light.
 */
export async function cardShots(page: Page, id: string, name: string): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [1280, 375, 320]) {
      await page.setViewportSize({ width, height: 900 });
      const card = page.getByTestId(`card-${id}`);
      // A live event (the resumed run's reply, the undo's outcome) redraws the page: a card
      // that left the document while being shot is found again and shot again.
      await expect(async () => {
        await card.scrollIntoViewIfNeeded({ timeout: 2_000 });
        await shot(card, `${name}-${width}-${scheme}`);
      }).toPass({ timeout: 15_000 });
      const overflow = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      expect(overflow, `sideways scroll at ${width} px`).toBeLessThanOrEqual(0);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });
}
