// Pairing and devices (issue 5 "Devices, sessions, scopes"): a browser is paired through the
// one-time link `iris pair` prints, appears on the Devices page with its scope and last use, and
// a control device revokes it there, which signs that browser out. A control device also makes
// pairing links on the Devices page. Screenshots of both pages at 1280 and 375 px are attached.
import { test, expect, type Page } from '@playwright/test';
import { askAndOpenCard, pairingLink, pairThrough, PHONE, shot, watchConsole, openLive } from './helpers';


test.describe.configure({ mode: 'serial' });

test('a browser pairs through the link, shows on Devices, and is signed out when revoked', async ({
  page,
  browser,
  baseURL,
}, testInfo) => {
  const link = pairingLink('read');
  expect(link).toMatch(/\/pair\/[0-9a-f]{64}$/);

  // The new browser, at phone width: the link's page says what pairing grants.
  const context = await browser.newContext({ baseURL, viewport: PHONE });
  try {
    const tablet = await context.newPage();
    const problems = watchConsole(tablet);
    await tablet.goto(link);
    await expect(tablet.getByTestId('pair-grant')).toContainText('a read device');
    await expect(tablet.getByTestId('pair-grant')).toContainText('never approve or reject');
    await shot(tablet, 'pairing-page-phone');
    await testInfo.attach('pairing page at 375 px', {
      body: await tablet.screenshot(),
      contentType: 'image/png',
    });
    const overflow = await tablet.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow, 'no sideways scroll at 375 px').toBeLessThanOrEqual(0);

    await tablet.getByLabel('Name this device').fill('kitchen tablet');
    await tablet.getByRole('button', { name: 'Pair this browser' }).click();
    await tablet.waitForURL('**/activity');
    await expect(tablet.getByTestId('viewer')).toContainText('kitchen tablet');

    // The link is used up: another browser opening it is told so, and paired as nobody.
    const late = await browser.newContext({ baseURL });
    const latePage = await late.newPage();
    await latePage.goto(link);
    await expect(latePage.getByTestId('pair-closed')).toContainText('kitchen tablet');
    await expect(latePage.getByRole('heading')).toHaveText('This pairing link was already used');
    await late.close();

    // A read device sees the devices but may neither revoke nor pair.
    await openLive(tablet, '/devices');
    await expect(tablet.getByTestId('device-row').filter({ hasText: 'kitchen tablet' })).toBeVisible();
    await expect(tablet.getByRole('button', { name: 'Revoke' })).toHaveCount(0);
    await expect(tablet.getByTestId('pair-read')).toHaveCount(0);

    // The owner's Devices page lists it with its scope and marks the owner's own browser.
    await openLive(page, '/devices');
    const row = page.locator('[data-device="kitchen tablet"]');
    await expect(row).toContainText('Read');
    await expect(row).not.toContainText('last used never');
    await expect(page.locator('[data-device="demo-owner-browser"]')).toContainText('This device');
    // The demo's owner cannot be revoked while the demo runs: no Revoke, a line saying why.
    const owner = page.locator('[data-device="demo-owner-browser"]');
    await expect(owner.getByRole('button', { name: 'Revoke' })).toHaveCount(0);
    await expect(owner.getByTestId('demo-owner-note')).toContainText('every browser of the demo signs in as it');
    await shot(page, 'devices-page-desktop');
    await page.setViewportSize(PHONE);
    await shot(page, 'devices-page-phone', true);
    await testInfo.attach('devices page at 375 px', {
      body: await page.screenshot({ fullPage: true }),
      contentType: 'image/png',
    });
    await page.setViewportSize({ width: 1280, height: 900 });

    // Revoke takes a second tap that says what it does.
    await row.getByRole('button', { name: 'Revoke' }).click();
    // A read device never answered cards: revoking it stops it seeing them.
    await expect(row.locator('.device-confirm')).toContainText('stop seeing cards at once');
    await expect(row.locator('.device-confirm')).not.toContainText('answering');
    await row.getByTestId('confirm-revoke').click();
    await expect(page.locator('[data-device="kitchen tablet"]')).toHaveCount(0);

    // The revoked browser's open page learns it at the next live event (a new card), with no
    // reload by hand, and shows no cards any more.
    const { id } = await askAndOpenCard(page);
    await expect(tablet.getByText('This browser is not paired with IRIS')).toBeVisible();
    await expect(tablet.getByTestId('device-row')).toHaveCount(0);
    // Nor is it offered a chat box it could not use: it is told to pair first.
    await expect(tablet.getByTestId('chat-view-only')).toHaveText(
      'Pair this browser with IRIS to ask it anything.',
    );
    await expect(tablet.getByTestId('chat-input')).toHaveCount(0);
    const card = page.getByTestId(`card-${id}`);
    await card.getByTestId('reject-button').click();
    await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
    expect(problems.filter((p) => !p.includes('401'))).toEqual([]);
  } finally {
    await context.close();
  }
});

test('a control device makes a pairing link on the Devices page', async ({ page, browser, baseURL }) => {
  await openLive(page, '/devices');
  await page.getByTestId('pair-control').click();
  const url = page.getByTestId('pair-url');
  await expect(url).toHaveValue(/\/pair\/[0-9a-f]{64}$/);
  await expect(page.getByTestId('pair-offer')).toContainText('Control link, works once until');
  // A QR code of the link, for the new phone's camera (server/src/pairing.rs tests that it
  // reads back as the link).
  await expect(page.getByTestId('pair-qr')).toBeVisible();
  await expect(page.getByTestId('pair-qr')).toHaveAttribute('aria-label', 'QR code of the pairing link');
  const link = await url.inputValue();
  // The whole link shows on a phone (wrapped, never cut), and Copy puts it on the clipboard.
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.setViewportSize({ width: 320, height: 640 });
  const box = (await url.boundingBox())!;
  expect(box.x + box.width).toBeLessThanOrEqual(320);
  expect(await url.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
  expect(await url.evaluate((el) => el.scrollHeight <= el.clientHeight)).toBe(true);
  await shot(page.getByTestId('pair-offer'), 'pairing-link-320');
  await page.getByTestId('pair-copy').click();
  await expect(page.getByTestId('pair-copied')).toHaveText('Copied');
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);
  await page.setViewportSize({ width: 1280, height: 900 });

  const context = await browser.newContext({ baseURL });
  try {
    const phone = await context.newPage();
    await phone.goto(link);
    await expect(phone.getByTestId('pair-grant')).toContainText('a control device');
    await phone.getByLabel('Name this device').fill('second phone');
    await phone.getByRole('button', { name: 'Pair this browser' }).click();
    await phone.waitForURL('**/activity');
    await expect(phone.getByTestId('viewer')).toContainText('second phone');
  } finally {
    await context.close();
  }
});

test('a paired browser following a link from another site stays itself (SameSite=Strict)', async ({
  browser,
  baseURL,
}) => {
  const context = await browser.newContext({ baseURL });
  try {
    const tablet = await context.newPage();
    await pairThrough(tablet, pairingLink('read'), 'hall tablet');
    // A page of another site with a link to the app, as in webmail or a chat's web app.
    await tablet.route('http://elsewhere.test/**', (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<a id="go" href="${baseURL}/activity">open IRIS</a>`,
      }),
    );
    await tablet.goto('http://elsewhere.test/');
    await tablet.click('#go');
    await tablet.waitForURL('**/activity');
    // The session cookie was used after all: the tablet, not a new (demo) sign-in.
    await expect(tablet.getByTestId('viewer')).toContainText('hall tablet');
  } finally {
    await context.close();
  }
});
