// A live event (a card requested elsewhere) loads Activity's lists again: the cards that did not
// change keep their elements, so a button about to be tapped is still the one on screen, and
// the new card joins the list.
import { expect, test } from '@playwright/test';
import { addDevice, askAndOpenCard, REQUEST, watchConsole } from './helpers';

test('a live event keeps the cards that did not change, element for element', async ({ page }) => {
  const problems = watchConsole(page);
  const { id, card } = await askAndOpenCard(page);
  const action = await card.getByTestId('action-button').elementHandle();
  const reject = await card.getByTestId('reject-button').elementHandle();

  const cli = addDevice('live-cli', 'control');
  const asked = await page.request.post('/api/chat', {
    headers: { Authorization: `Bearer ${cli.token}` },
    data: { message: REQUEST },
  });
  const another = (await asked.json()).approval_id;
  expect(another).not.toBe(id);
  await expect(page.getByTestId(`card-${another}`)).toBeVisible();
  expect(await action!.evaluate((el) => el.isConnected)).toBe(true);
  expect(await reject!.evaluate((el) => el.isConnected)).toBe(true);

  // The kept button still answers its card.
  await reject!.click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  const other = await page.request.post(`/governance/approvals/${another}/respond`, {
    headers: { Authorization: `Bearer ${cli.token}` },
    data: { decision: 'reject' },
  });
  expect(other.status()).toBe(200);
  expect(problems, 'no console errors or warnings').toEqual([]);
});
