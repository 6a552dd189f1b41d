// The server's HTML is usable before the wasm arrives (seconds on a slow phone, BENCHMARKS.md
// "Fast 3G"), and a `<details>` opens without any script. A toggle the owner opens in those
// seconds stays open when the app wakes up: "Show exact call" on a waiting card, "What
// happened" on an answered one; a history line is a link to its card's page. The wasm is held
// back by the test itself (no timing guess): the page is fully there, the toggle is opened,
// then the wasm is let through.
import { test, expect, type Page } from '@playwright/test';
import { askAndOpenCard, watchConsole } from './helpers';

/**
 * Opens `url` with the wasm held back, runs `before` on the page as the server sent it, then
 * lets the wasm through and waits until the app is hydrated (the chat input is editable only
 * then).
 */
async function withWasmHeld(page: Page, url: string, before: () => Promise<void>): Promise<void> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = 0;
  await page.route('**/*.wasm', async (route) => {
    held += 1;
    await released;
    // A request of a page the test navigated away from is gone by then: nothing to continue.
    await route.continue().catch(() => undefined);
  });
  await page.goto(url);
  await expect(page.getByTestId('chat-input')).not.toBeEditable();
  await before();
  // Still not hydrated: what `before` did was the browser's own behaviour.
  await expect(page.getByTestId('chat-input')).not.toBeEditable();
  release();
  await expect(page.getByTestId('chat-input')).toBeEditable();
  expect(held, 'the wasm was requested and held').toBeGreaterThan(0);
  await page.unroute('**/*.wasm');
}

test('a toggle opened before hydration stays open after it', async ({ page }) => {
  const problems = watchConsole(page);
  const { id } = await askAndOpenCard(page);
  const card = page.getByTestId(`card-${id}`);
  const toggle = card.getByTestId('exact-call-toggle');
  const call = card.getByTestId('exact-call');

  await withWasmHeld(page, `/activity/${id}`, async () => {
    await expect(toggle).toHaveText('Show exact call');
    await toggle.click();
    await expect(call).toBeVisible();
  });
  await expect(call).toBeVisible();
  // The app took the element's state: its label follows, and closing it works.
  await expect(toggle).toHaveText('Hide exact call');
  await toggle.click();
  await expect(call).toBeHidden();
  await expect(toggle).toHaveText('Show exact call');

  // Answered, the card has its trail; opened before hydration, it stays open and loads.
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  const trail = card.getByTestId('card-trail');
  await withWasmHeld(page, `/activity/${id}`, async () => {
    await trail.locator('summary').click();
    await expect(trail).toHaveJSProperty('open', true);
  });
  await expect(trail).toHaveJSProperty('open', true);
  await expect(trail.getByTestId('trail-entry').first()).toBeVisible();
  await expect(trail.getByTestId('trail-entry').first()).toHaveAttribute('data-kind', 'decision');
  await expect(trail.getByTestId('trail-entry').first()).toContainText('Rejected by');

  // Before hydration, a history line is a link to its card's own page.
  await withWasmHeld(page, '/activity', async () => {
    await page.getByTestId(`line-${id}`).click();
    await expect(page).toHaveURL(new RegExp(`/activity/${id}$`));
    await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  });

  expect(problems, 'no console errors or warnings').toEqual([]);
});
