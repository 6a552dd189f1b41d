// One way to write a moment, on every surface (crates/core/src/wire/when.rs): "6 Dec 2026,
// 15:05:09", with seconds. The page keeps the browser's offset in a cookie, so the server
// renders times as the live page shows them and nothing changes on screen when it goes live.
import { expect, test } from '@playwright/test';
import { askAndOpenCard, watchConsole } from './helpers';

test.use({ timezoneId: 'Asia/Kolkata' });

test('times read the same before and after the page is live, in the owner’s offset', async ({ page }) => {
  const problems = watchConsole(page);
  const { id, card } = await askAndOpenCard(page);
  const asked = card.getByTestId('card-time').locator('time').first();
  await expect(asked).not.toContainText('UTC');
  const live = (await asked.innerText()).trim();
  expect(live).toMatch(/^\d{1,2} [A-Z][a-z]{2} \d{4}, \d{2}:\d{2}:\d{2}$/);
  // Kolkata is UTC+05:30: the minutes differ from UTC's by 30.
  const utc = new Date((await asked.getAttribute('datetime'))!);
  expect(Number(live.slice(-5, -3))).toBe((utc.getUTCMinutes() + 30) % 60);
  // The server now renders the same words: the page told it the offset.
  const html = await (await page.request.get(`/activity/${id}`)).text();
  expect(html).toContain(live);
  expect(problems, 'no console errors or warnings').toEqual([]);
});
