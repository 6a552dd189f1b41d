// Every surface is a view of one approval row (issue 5): a read browser only looks, a second
// browser hears about a new card at once (the banner), a card open in the browser follows an
// answer given on the CLI without a reload, and the card works at 375 px.
//
// The specs share one demo server and mailbox (one at a time, see playwright.config.ts); each
// test leaves the mailbox as it found it (it rejects its card, or undoes what ran).
import { test, expect, type Browser, type BrowserContext, type Page } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import {
  askAndOpenCard,
  pairingLink,
  pairThrough,
  PHONE,
  serverDatabaseUrl,
  shot,
  watchConsole,
  WEEK_PROMOS,
  openLive,
  followLive,
} from './helpers';

const IRIS =
  process.env.IRIS_E2E_IRIS_BIN ?? path.resolve(__dirname, '..', '..', 'target', 'debug', 'iris');

function iris(args: string[], env: Record<string, string>): string {
  return execFileSync(IRIS, args, { env: { ...process.env, ...env }, encoding: 'utf8' });
}

/** Adds a device to the e2e database and returns its token (the last line `devices add` prints). */
function addDevice(name: string, scope: 'read' | 'control'): string {
  const databaseUrl = serverDatabaseUrl();
  const added = iris(['devices', 'add', '--name', name, '--scope', scope], {
    IRIS_DATABASE_URL: databaseUrl,
  });
  return added.trim().split('\n').pop()!.trim();
}

/**
 * A second browser paired the way a person does it: `iris pair --scope SCOPE` on the server,
 * the link opened in the new browser, a name typed, "Pair this browser" pressed. The browser
 * then holds only its session cookie and lands on the Activity page.
 */
async function pairedBrowser(
  browser: Browser,
  baseURL: string,
  scope: 'read' | 'control',
  name: string,
): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL });
  const page = await context.newPage();
  await pairThrough(page, pairingLink(scope), name);
  await page.close();
  return context;
}


/** Rejects the card from the owner's page, so the mailbox is left as it was. */
async function rejectCard(page: Page, id: string): Promise<void> {
  const card = page.getByTestId(`card-${id}`);
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
}

test.describe.configure({ mode: 'serial' });

test('a read browser sees the card, no buttons, and its answer is refused (403)', async ({
  page,
  browser,
  baseURL,
}, testInfo) => {
  const { id, card } = await askAndOpenCard(page);

  const context = await pairedBrowser(browser, baseURL!, 'read', 'wall-screen');
  try {
    const wall = await context.newPage();
    const problems = watchConsole(wall);
    await openLive(wall, `/activity/${id}`);
    const wallCard = wall.getByTestId(`card-${id}`);
    await expect(wallCard).toBeVisible();
    for (const promo of WEEK_PROMOS) {
      await expect(wallCard.getByTestId('card-lines')).toContainText(promo);
    }
    await expect(wallCard.getByTestId('view-only')).toHaveText('This device can only view.');
    await expect(wallCard.getByTestId('action-button')).toHaveCount(0);
    await expect(wallCard.getByTestId('reject-button')).toHaveCount(0);
    await expect(wall.getByTestId('viewer')).toContainText('wall-screen');

    // No chat box is offered, with the same words, rather than one refused on send.
    await expect(wall.getByTestId('chat-view-only')).toHaveText('This device can only view.');
    await expect(wall.getByTestId('chat-input')).toHaveCount(0);
    await expect(wall.getByTestId('chat-send')).toHaveCount(0);
    // Nothing speaks to it as the one who answers: the card waits for an answer, not for it,
    // and the chat does not invite it to ask.
    await expect(wallCard.getByTestId('card-status')).toHaveText('Waiting for an answer');
    await expect(wall.locator('#pending-title')).toContainText('Waiting for an answer');
    await expect(wall.locator('.chat-empty')).toHaveCount(0);
    // No hydration mismatch or panic (checked before the refused fetch logs its 403).
    expect(problems).toEqual([]);

    // Answering anyway, from the page's own origin with its cookie: forbidden.
    const status = await wall.evaluate(async (approvalId) => {
      const response = await fetch(`/governance/approvals/${approvalId}/respond`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approve' }),
      });
      return response.status;
    }, id);
    expect(status).toBe(403);
    await expect(wallCard.getByTestId('card-status')).toHaveText('Waiting for an answer');

    // (d) The card as a phone shows it: 375 px wide, nothing wider than the screen.
    await wall.setViewportSize(PHONE);
    const box = await wallCard.boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(PHONE.width);
    const scrollWidth = await wall.evaluate(() => document.documentElement.scrollWidth);
    expect(scrollWidth).toBeLessThanOrEqual(PHONE.width);
    await wall.close();
  } finally {
    await context.close();
  }

  await page.setViewportSize(PHONE);
  await expect(card).toBeVisible();
  const png = await card.screenshot();
  await testInfo.attach('card-375px', { body: png, contentType: 'image/png' });
  await shot(card, 'surfaces-card-375px');

  await rejectCard(page, id);
});

test('a second browser shows the banner when a card is requested, and it opens the card', async ({
  page,
  browser,
  baseURL,
}) => {
  const context = await pairedBrowser(browser, baseURL!, 'control', 'laptop');
  try {
    const other = await context.newPage();
    // Any page, not only Activity: the banner is app-wide.
    await openLive(other, '/plugins');
    await expect(other.getByTestId('request-banner')).toHaveCount(0);
    // A polite live region is in the page before any news, so a screen reader reads it out.
    const announcer = other.getByTestId('card-announcer');
    await expect(announcer).toHaveAttribute('aria-live', 'polite');
    await expect(announcer).toHaveText('');

    const { id } = await askAndOpenCard(page);

    const banner = other.getByTestId('request-banner');
    await expect(banner).toBeVisible();
    await expect(banner).toHaveAttribute('data-approval-id', id);
    await expect(banner).toContainText(`Trash ${WEEK_PROMOS.length} emails`);
    await expect(announcer).toHaveText(`New card waiting: Trash ${WEEK_PROMOS.length} emails`);
    await shot(other, 'surfaces-banner-desktop');
    // The tab that asked has the card in its chat and on its page: no banner there.
    await expect(page.getByTestId('request-banner')).toHaveCount(0);

    await followLive(other, banner.getByTestId('request-banner-open'));
    await expect(other).toHaveURL(new RegExp(`/activity/${id}$`));
    await expect(other.getByTestId(`card-${id}`)).toBeVisible();
    await expect(other.getByTestId('request-banner')).toHaveCount(0);

    // Answered from the second browser: the first one's card follows.
    await rejectCard(other, id);
    await expect(page.getByTestId(`card-${id}`).getByTestId('outcome')).toHaveAttribute(
      'data-status',
      'rejected',
    );
  } finally {
    await context.close();
  }
});

test('a card open in the browser changes to its outcome when the CLI approves it', async ({
  page,
  baseURL,
}) => {
  const { id, card } = await askAndOpenCard(page);
  await expect(card.getByTestId('card-status')).toHaveText('Waiting for you');
  // A marker that a reload would wipe.
  await page.evaluate(() => {
    (window as unknown as { irisNoReload: boolean }).irisNoReload = true;
  });

  const token = addDevice('terminal', 'control');
  iris(['approvals', 'approve', id], { IRIS_URL: baseURL!, IRIS_TOKEN: token });

  const outcome = card.getByTestId('outcome');
  await expect(outcome).toHaveAttribute('data-status', 'approved');
  await expect(outcome).toContainText('by terminal via cli');
  await expect(card.getByTestId('outcome-execution')).toHaveText(
    `Moved ${WEEK_PROMOS.length} emails to Trash`,
  );
  await expect(outcome).toHaveAttribute('data-outcome', 'success');
  await expect(card.getByTestId('action-button')).toHaveCount(0);
  expect(
    await page.evaluate(() => (window as unknown as { irisNoReload?: boolean }).irisNoReload),
  ).toBe(true);

  // Put the mail back for the next spec.
  const input = page.getByTestId('chat-input');
  await input.fill('undo that');
  await page.getByTestId('chat-send').click();
  await expect(page.getByTestId('chat-line').last()).toContainText(
    `Restored ${WEEK_PROMOS.length} emails`,
  );
});
