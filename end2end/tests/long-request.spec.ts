// A phone must never scroll sideways: a request with a long unbroken word (a pasted URL) wraps
// inside the card and the chat instead of widening the page.
import { test, expect } from '@playwright/test';
import { PHONE, REQUEST, askAndFollow, shot } from './helpers';

test('a long unbroken request wraps on a phone', async ({ page }) => {
  await page.setViewportSize(PHONE);
  const request = `${REQUEST} https://shop.example.org/unsubscribe?u=${'a1b2c3d4e5'.repeat(12)}`;
  const { card } = await askAndFollow(page, request);
  await expect(card).toContainText('a1b2c3d4e5a1b2c3d4e5');

  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow, 'the page scrolls sideways').toBeLessThanOrEqual(0);
  await shot(card, 'long-request-card-phone');

  // Leave the shared demo mailbox as it was.
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
});

test('a request near the chat limit is quoted in part; the buttons stay near the title', async ({
  page,
}) => {
  await page.setViewportSize(PHONE);
  const request = `${REQUEST} ${'and the other offers too '.repeat(158)}`.slice(0, 3990);
  const { card } = await askAndFollow(page, request);
  const quote = card.getByTestId('card-asked').locator('q');
  const shown = (await quote.textContent())!;
  expect(shown.length).toBeLessThanOrEqual(280);
  expect(shown.endsWith('…')).toBe(true);
  // The quote takes a few lines, so the buttons stay near the title (quoted whole, 3,990
  // characters run to about a hundred lines at this width).
  const quoted = (await card.getByTestId('card-asked').boundingBox())!.height;
  expect(quoted).toBeLessThan(300);
  await expect(card.getByTestId('reject-button')).toBeVisible();
  await shot(card, 'long-request-clipped-phone');
  // The whole request is a tap away.
  const all = card.getByTestId('card-asked-all');
  await all.locator('summary').click();
  await expect(all.locator('.card-asked-full')).toHaveText(request.trim());
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow, 'the page scrolls sideways').toBeLessThanOrEqual(0);

  // Leave the shared demo mailbox as it was.
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
});
