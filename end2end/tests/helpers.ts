// Shared steps for the approval specs: ask in chat, follow the halt link, take screenshots.
import { expect, type Locator, type Page } from '@playwright/test';
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

const SHOTS = path.join(__dirname, '..', 'screenshots');

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
 * Opens Activity, asks for the promo clean-up, follows the halt message's link and returns the
 * approval id and its card.
 */
export async function askAndOpenCard(page: Page): Promise<{ id: string; card: Locator }> {
  await page.goto('/activity');
  const input = page.getByTestId('chat-input');
  // Editable only once the page is hydrated.
  await expect(input).toBeEditable();
  await input.fill(REQUEST);
  await page.getByTestId('chat-send').click();

  const ownerLine = page.getByTestId('chat-line').filter({ hasText: REQUEST }).last();
  await expect(ownerLine).toHaveAttribute('data-role', 'owner');

  const halt = page
    .getByTestId('chat-line')
    .filter({ has: page.getByTestId('chat-approval-link') })
    .last();
  await expect(halt).toContainText('I need your approval to trash');
  await expect(halt).toContainText('Nothing has been changed yet');
  const link = halt.getByTestId('chat-approval-link');
  const href = await link.getAttribute('href');
  expect(href).toMatch(/^\/activity\/[A-Za-z0-9-]+$/);
  const id = href!.split('/').pop()!;

  await link.click();
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

const IRIS_BIN =
  process.env.IRIS_E2E_IRIS_BIN ?? path.resolve(__dirname, '..', '..', 'target', 'debug', 'iris');

/**
 * `iris pair --scope SCOPE` against the e2e server's database: the one-time link it prints
 * (its last line), made on the e2e server's address.
 */
export function pairingLink(scope: 'read' | 'control'): string {
  const out: string = execFileSync(IRIS_BIN, ['pair', '--scope', scope], {
    env: {
      ...process.env,
      IRIS_DATABASE_URL: `sqlite://${path.join(process.env.IRIS_E2E_RUN_DIR!, 'iris.db')}`,
      IRIS_BIND: '127.0.0.1:3210',
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
