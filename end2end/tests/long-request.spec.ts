// A phone must never scroll sideways: a request with a long unbroken word (a pasted URL) wraps
// inside the card and the chat instead of widening the page.
import { test, expect } from '@playwright/test';
import { PHONE, REQUEST, shot, followLive } from './helpers';

test('a long unbroken request wraps on a phone', async ({ page }) => {
  await page.setViewportSize(PHONE);
  await page.goto('/activity');
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  const request = `${REQUEST} https://shop.example.org/unsubscribe?u=${'a1b2c3d4e5'.repeat(12)}`;
  await input.fill(request);
  await page.getByTestId('chat-send').click();
  const link = page.getByTestId('chat-approval-link').last();
  await expect(link).toBeVisible();
  const id = (await link.getAttribute('href'))!.split('/').pop()!;
  await followLive(page, link);
  const card = page.getByTestId(`card-${id}`);
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
