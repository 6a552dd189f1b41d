// The Plugins page: reached from the header, one table per plugin with each tool's effect, gate
// and undo; `trash_email` is clearly "Approved per call". Readable at 375 px without sideways
// scrolling. Read-only: it changes nothing the other specs rely on.
import { test, expect, type Page } from '@playwright/test';
import { DESKTOP, PHONE, pageShots, shotBothWidths, watchConsole } from './helpers';

async function expectNoSidewaysScroll(page: Page): Promise<void> {
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow, 'the page scrolls sideways').toBeLessThanOrEqual(0);
}

test('the Plugins page shows each tool with its effect, gate and undo', async ({ page }) => {
  const problems = watchConsole(page);

  // From Activity, the header's link leads to Plugins (a page of its own).
  await page.goto('/activity');
  await expect(page.getByTestId('chat-input')).toBeEditable();
  const nav = page.getByRole('navigation', { name: 'Pages' });
  await expect(nav.getByRole('link', { name: 'Activity' })).toHaveAttribute('aria-current', 'page');
  await nav.getByRole('link', { name: 'Plugins' }).click();
  await expect(page).toHaveURL(/\/plugins$/);
  await expect(nav.getByRole('link', { name: 'Plugins' })).toHaveAttribute('aria-current', 'page');

  const email = page.getByTestId('plugin-email');
  await expect(email).toBeVisible();
  await expect(email.getByRole('heading')).toContainText('email');
  await expect(email.getByRole('heading')).toContainText('6 tools');
  const table = email.getByTestId('plugin-table');
  await expect(table.locator('thead th')).toHaveText(['Tool', 'Effect', 'Gate', 'Undo']);
  await expect(table.locator('tbody tr')).toHaveCount(6);

  const trash = table.getByTestId('tool-trash_email');
  await expect(trash).toHaveAttribute('data-effect', 'destructive');
  await expect(trash).toHaveAttribute('data-gate', 'approval');
  await expect(trash.getByTestId('tool-effect')).toHaveText('Destructive');
  await expect(trash.getByTestId('tool-gate')).toHaveText('Approved per call');
  await expect(trash.getByTestId('undo-tool')).toHaveText('restore_email');
  await expect(trash.getByTestId('undo-window')).toHaveText('within 30 days');
  await expect(trash).toContainText('delete_email');

  const search = table.getByTestId('tool-search_inbox');
  await expect(search).toHaveAttribute('data-effect', 'read');
  await expect(search).toHaveAttribute('data-gate', 'none');
  await expect(search.getByTestId('tool-effect')).toHaveText('Read');
  await expect(search.getByTestId('tool-gate')).toHaveText('Runs without asking');
  await expect(search).toContainText('No undo');

  // The category clean-up runs without a card; its reply offers "undo that", and says so here.
  const category = table.getByTestId('tool-trash_category');
  await expect(category.getByTestId('tool-effect')).toHaveText('Write');
  await expect(category.getByTestId('reply-undo')).toHaveText('in its reply (restore_email)');
  await expect(category).not.toContainText('No undo');
  // At 320 px it stays beside its label, on the label's line.
  await page.setViewportSize({ width: 320, height: 640 });
  const labelTop = await category
    .locator('.undo-cell')
    .evaluate((cell) => cell.getBoundingClientRect().top);
  const valueTop = await category
    .getByTestId('reply-undo')
    .evaluate((value) => value.getBoundingClientRect().top);
  expect(Math.abs(valueTop - labelTop)).toBeLessThan(8);
  await page.setViewportSize({ width: 1280, height: 900 });

  const restore = table.getByTestId('tool-restore_email');
  await expect(restore.getByTestId('tool-effect')).toHaveText('Write');
  await expect(restore.getByTestId('tool-gate')).toHaveText('Runs without asking');

  // send_email is a pinned write: a write, yet approved per call like trash_email.
  const send = table.getByTestId('tool-send_email');
  await expect(send).toHaveAttribute('data-effect', 'write');
  await expect(send).toHaveAttribute('data-gate', 'approval');
  await expect(send.getByTestId('tool-gate')).toHaveText('Approved per call');

  // Only the approval-gated tools are marked "Approved per call".
  await expect(table.getByText('Approved per call')).toHaveCount(2);

  // The description is one tap away.
  const more = trash.locator('details.tool-more');
  await expect(more.locator('p')).toBeHidden();
  await more.locator('summary').click();
  await expect(more.locator('p')).toContainText('Trash');
  await more.locator('summary').click();

  // A fresh load renders the same page on the server (no hydration warnings either).
  await page.goto('/plugins');
  await expect(page.getByTestId('tool-trash_email').getByTestId('tool-gate')).toHaveText(
    'Approved per call',
  );

  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    const gate = trash.getByTestId('tool-gate');
    await gate.scrollIntoViewIfNeeded();
    await expect(gate).toBeInViewport({ ratio: 1 });
    await expectNoSidewaysScroll(page);
  }
  await page.setViewportSize(DESKTOP);

  await pageShots(page, 'plugins-page');
  await shotBothWidths(page, () => page.getByTestId('plugin-email'), 'plugins-table');

  expect(problems, 'no console errors or warnings').toEqual([]);
});
