// The confirm dialog on the narrowest phone (320 px): every line it repeats can be read (a
// list longer than the screen scrolls inside the dialog, and says so), its buttons keep their
// words whole, and the page behind it does not scroll while it is open. Rejected at the end,
// so the next spec finds the same promos.
import { test, expect } from '@playwright/test';
import { askAndOpenCard, shot, watchConsole, WEEK_PROMOS } from './helpers';

test('the confirm dialog at 320 px shows every line, whole buttons, and holds the page', async ({
  page,
}) => {
  const problems = watchConsole(page);
  const { card } = await askAndOpenCard(page);
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 320, height: 568 });
    await card.getByTestId('action-button').click();
    const dialog = page.getByRole('dialog');
    await expect(dialog).toBeVisible();
    await shot(page, `dialog-320-${scheme}`);
    await page.getByTestId('dialog-cancel').click();
    await expect(dialog).toBeHidden();
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await card.getByTestId('action-button').click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  // Every line is there, and the last one can be brought into view inside the dialog.
  const lines = dialog.locator('li');
  await expect(lines).toHaveCount(WEEK_PROMOS.length);
  await lines.last().scrollIntoViewIfNeeded();
  await expect(lines.last()).toBeInViewport();
  // Buttons keep their words on one line (the action takes a row of its own when both do not
  // fit side by side), and inside the screen.
  for (const id of ['dialog-cancel', 'dialog-confirm']) {
    const button = dialog.getByTestId(id);
    const lines = await button.evaluate((b) => {
      const range = document.createRange();
      range.selectNodeContents(b);
      return new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top))).size;
    });
    expect(lines, `${id} on one line`).toBe(1);
    const box = (await button.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(320);
  }
  // The page behind does not scroll while the dialog is open.
  const before = await page.evaluate(() => window.scrollY);
  await page.mouse.wheel(0, 400);
  expect(await page.evaluate(() => window.scrollY)).toBe(before);
  await page.getByTestId('dialog-cancel').click();
  await card.getByTestId('reject-button').click();
  await expect(card).toHaveAttribute('data-status', 'rejected');
  expect(problems).toEqual([]);
});
