// An answer that gets no reply (IRIS stopped, the network dropped) is not known to have
// arrived: the card says so and never suggests answering again; it keeps the sentence until the
// page shows what IRIS recorded (fail closed, docs/liveness.md).
import { expect, test } from '@playwright/test';
import { askAndOpenCard } from './helpers';

test('an answer with no reply says it is not known whether it arrived', async ({ page }) => {
  const { id, card } = await askAndOpenCard(page);
  // The request never reaches IRIS: the browser reports a failed fetch.
  await page.route('**/ui/respond_approval*', (route) => route.abort('connectionreset'));
  await card.getByTestId('reject-button').click();
  const error = card.getByTestId('card-error');
  await expect(error).toContainText('it is not known whether your answer arrived');
  await expect(error).toContainText('Do not answer again');
  await expect(error).not.toContainText('Try again');
  // The card stays as IRIS last showed it (it did not redraw without the sentence).
  await expect(card.getByTestId('reject-button')).toBeVisible();
  await page.unroute('**/ui/respond_approval*');
  // It never arrived: IRIS still has the card waiting.
  const row = await (await page.request.get(`/governance/approvals/${id}`)).json();
  expect(row.status).toBe('pending');
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
});
