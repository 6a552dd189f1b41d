// While IRIS cannot be reached (its live stream is down: IRIS stopped, the network dropped),
// every page says so before the owner answers anything, and the notice goes by itself once the
// browser's retry opens the stream again (docs/liveness.md "When IRIS cannot be reached").
import { expect, test } from '@playwright/test';
import { expectReadable, openLive, shot, shotBothWidths } from './helpers';

test('a page says while IRIS cannot be reached, and stops saying so when it is back', async ({
  page,
}) => {
  // The server's render never carries the notice: it knows nothing of the browser's stream.
  const html = await (await page.request.get('/activity')).text();
  expect(html).not.toContain('offline-notice');

  // Every try of the live stream fails, as when IRIS is down.
  let refused = 0;
  await page.route('**/api/events', (route) => {
    refused += 1;
    return route.abort('connectionrefused');
  });
  await openLive(page, '/activity');
  const notice = page.getByTestId('offline-notice');
  await expect(notice).toBeVisible();
  await expect(notice).toContainText('IRIS cannot be reached right now.');
  await expect(notice).toContainText('may not arrive');
  expect(refused).toBeGreaterThan(0);
  // It reads at WCAG AA in both colour schemes, down to 320 px.
  await expectReadable(notice);
  await shotBothWidths(page, () => page, 'offline-notice');
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.setViewportSize({ width: 320, height: 640 });
  await expectReadable(notice);
  await shot(page, 'offline-notice-dark-320');
  await page.emulateMedia({ colorScheme: 'light' });

  // IRIS is back: the browser's next retry opens the stream and the notice goes.
  await page.unroute('**/api/events');
  await expect(notice).toHaveCount(0, { timeout: 30_000 });
  // It stays gone while connected, on another page too.
  await openLive(page, '/devices');
  await expect(page.getByTestId('request-banner')).toHaveCount(0);
  await expect(page.getByTestId('offline-notice')).toHaveCount(0);
});
