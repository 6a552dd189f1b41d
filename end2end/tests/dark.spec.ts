// The dark scheme (issue 5): with the system set to dark, the page, the card, its dialog and
// its outcomes switch to the dark palette of style/iris.css, and their text still reads at WCAG
// AA (4.5:1). The 375 px pictures are attached to the report for a person to look at.
import { test, expect, type Locator, type Page, type TestInfo } from '@playwright/test';
import {
  askAndOpenCard,
  backgroundOf,
  expectReadable,
  PHONE,
  DESKTOP,
  shot,
  styleOf,
  undoInChat,
  WEEK_PROMOS,
  watchConsole,
  askAndFollow,
} from './helpers';

test.use({ colorScheme: 'dark' });

/** Luminance 0 (black) to 1 (white) of a computed `rgb(...)` colour. */
function luminance(css: string): number {
  const [r, g, b] = css.match(/\d+(\.\d+)?/g)!.slice(0, 3).map(Number);
  const lin = (v: number) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

/** The text a pending card shows, each piece on the colour behind it. */
function pendingCardText(card: Locator): Locator[] {
  return [
    card.locator('.card-title'),
    card.getByTestId('badge-deletes'),
    card.getByTestId('card-status'),
    card.locator('.card-lines li'),
    card.getByTestId('card-undo'),
    card.locator('.card-asked .label, .card-asked q'),
    card.getByTestId('exact-call-toggle'),
    card.locator('.card-time'),
    card.getByTestId('reject-button'),
    card.getByTestId('action-button'),
  ];
}

/** Attaches a 375 px picture of `target` to the report (and keeps a copy in screenshots/). */
async function attach375(
  page: Page,
  target: Page | Locator,
  name: string,
  testInfo: TestInfo,
): Promise<void> {
  await page.setViewportSize(PHONE);
  const png = await target.screenshot();
  await testInfo.attach(name, { body: png, contentType: 'image/png' });
  await shot(target, name);
  await page.setViewportSize(DESKTOP);
}

test('in a dark system setting the card is dark and its text reads at 4.5:1', async ({
  page,
}, testInfo) => {
  const problems = watchConsole(page);
  const { card } = await askAndOpenCard(page);

  // The shell tells the browser both schemes exist (form controls and scroll bars follow).
  await expect(page.locator('meta[name="color-scheme"]')).toHaveAttribute(
    'content',
    'light dark',
  );

  // The same card in the light scheme, for comparison.
  await page.emulateMedia({ colorScheme: 'light' });
  const lightCard = await backgroundOf(card);
  const lightPage = await backgroundOf(page.locator('body'));
  for (const text of pendingCardText(card)) await expectReadable(text);

  await page.emulateMedia({ colorScheme: 'dark' });
  const darkCard = await backgroundOf(card);
  const darkPage = await backgroundOf(page.locator('body'));
  expect(darkCard).not.toBe(lightCard);
  expect(darkPage).not.toBe(lightPage);
  expect(luminance(darkCard), `dark card ${darkCard}`).toBeLessThan(0.05);
  expect(luminance(darkPage), `dark page ${darkPage}`).toBeLessThan(0.05);
  for (const text of pendingCardText(card)) await expectReadable(text);
  // Red still says "deletes data": the destructive edge and badge stay red.
  const edge = await styleOf(card, 'borderLeftColor');
  const [r, g, b] = edge.match(/\d+/g)!.map(Number);
  expect(r, `destructive edge ${edge}`).toBeGreaterThan(g + 80);
  expect(r).toBeGreaterThan(b + 80);
  // The chat beside the card.
  await expectReadable(page.getByTestId('chat-line').locator('.chat-text'));
  await expectReadable(page.getByTestId('chat-line').locator('.chat-who'));
  await expectReadable(page.getByTestId('chat-approval-link'));
  await attach375(page, card, 'dark-card-375px', testInfo);
  await attach375(page, page, 'dark-page-375px', testInfo);

  // The confirm dialog in the dark.
  await card.getByTestId('action-button').click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  expect(luminance(await backgroundOf(dialog))).toBeLessThan(0.05);
  for (const text of [
    dialog.locator('.dialog-title'),
    dialog.locator('.dialog-warning'),
    dialog.locator('.dialog-lines li'),
    dialog.locator('.dialog-undo'),
    dialog.getByTestId('dialog-cancel'),
    dialog.getByTestId('dialog-confirm'),
  ]) {
    await expectReadable(text);
  }
  await attach375(page, page, 'dark-dialog-375px', testInfo);

  // Approved and executed: green in the dark too.
  await dialog.getByTestId('dialog-confirm').click();
  const outcome = card.getByTestId('outcome');
  await expect(outcome).toHaveAttribute('data-outcome', 'success');
  await expect(card.getByTestId('outcome-execution')).toHaveText(
    `Moved ${WEEK_PROMOS.length} emails to Trash`,
  );
  const green = await backgroundOf(outcome);
  const [gr, gg, gb] = green.match(/\d+/g)!.map(Number);
  expect(gg, `approved outcome ${green} is green`).toBeGreaterThan(gr);
  expect(gg).toBeGreaterThan(gb);
  expect(luminance(green)).toBeLessThan(0.05);
  await expectReadable(outcome.locator('p'));
  await expectReadable(card.getByTestId('card-status'));
  await attach375(page, card, 'dark-approved-375px', testInfo);
  await undoInChat(page);

  expect(problems, 'no console errors or warnings').toEqual([]);
});

test('a rejected card is quiet and readable in the dark', async ({ page }, testInfo) => {
  const { card } = await askAndOpenCard(page);
  await card.getByTestId('reject-button').click();
  const rejected = card.getByTestId('outcome');
  await expect(rejected).toHaveAttribute('data-status', 'rejected');
  expect(luminance(await backgroundOf(rejected))).toBeLessThan(0.05);
  await expectReadable(rejected.locator('p'));
  await expectReadable(card.getByTestId('card-status'));
  await attach375(page, card, 'dark-rejected-375px', testInfo);
});

test('the Plugins page is dark and readable in a dark system setting', async ({
  page,
}, testInfo) => {
  await page.goto('/plugins');
  const table = page.getByTestId('plugin-table').first();
  await expect(table).toBeVisible();
  expect(luminance(await backgroundOf(page.locator('.plugin').first()))).toBeLessThan(0.05);
  await expectReadable(page.locator('.plugins-intro'));
  await expectReadable(page.locator('.tool-name'));
  await expectReadable(page.getByTestId('tool-effect'));
  await expectReadable(page.getByTestId('tool-gate'));
  await expectReadable(page.locator('.tools-table thead th'));
  await expectReadable(page.locator('.topnav a'));
  await attach375(page, page, 'dark-plugins-375px', testInfo);
});

test('a pinned write card "acts for you" in blue, not red, and reads in the dark', async ({
  page,
}, testInfo) => {
  const { card } = await askAndFollow(page, 'reply to Anna that Thursday works');
  await expect(card.getByTestId('badge-acts')).toHaveText('Acts for you');

  // Its edge is the accent (blue), not the destructive red.
  const edge = await styleOf(card, 'borderLeftColor');
  const [r, , b] = edge.match(/\d+/g)!.map(Number);
  expect(b, `pinned write edge ${edge} is blue`).toBeGreaterThan(r);
  expect(luminance(await backgroundOf(card))).toBeLessThan(0.05);
  for (const text of [
    card.locator('.card-title'),
    card.getByTestId('badge-acts'),
    card.getByTestId('card-status'),
    card.locator('.card-lines li'),
    card.getByTestId('reject-button'),
    card.getByTestId('action-button'),
  ]) {
    await expectReadable(text);
  }
  await attach375(page, card, 'dark-acts-for-you-375px', testInfo);

  // Nothing is sent: reject it.
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
});
