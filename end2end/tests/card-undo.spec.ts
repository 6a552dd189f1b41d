// Undo from the card: an executed card whose tool declares an undo offers a button named by the
// card ("Restore 5 emails") within its window; one tap restores exactly the trashed mail, once,
// and the card then says what came back, by whom, where and when, with the undo in its trail.
// The mail is back afterwards, so the next spec finds the same promos.
import { test, expect } from '@playwright/test';
import { addDevice, askAndOpenCard, cardShots, WEEK_PROMOS, watchConsole } from './helpers';

test('the card undoes exactly what ran, once, and says so', async ({ page }) => {
  const problems = watchConsole(page);
  const { id, card } = await askAndOpenCard(page);
  const n = WEEK_PROMOS.length;
  // Waiting: no undo yet.
  await expect(card.getByTestId('undo-button')).toHaveCount(0);

  await card.getByTestId('action-button').click();
  await page.getByRole('dialog').getByTestId('dialog-confirm').click();
  await expect(card.getByTestId('outcome-execution')).toHaveAttribute('data-execution', 'executed');

  const undo = card.getByTestId('undo-button');
  await expect(undo).toHaveText(`Restore ${n} emails`);
  await expect(undo).toBeEnabled();
  await expect(card.getByTestId('card-undo')).toContainText('restore');
  await cardShots(page, id, 'card-undo-offered');

  await undo.click();
  const undone = card.getByTestId('card-undone');
  await expect(undone).toHaveAttribute('data-undo', 'done');
  await expect(undone).toContainText('Undone by demo-owner-browser via web');
  await expect(undone).toContainText(`Restored ${n} emails from Trash to where they were.`);
  await expect(card.getByTestId('undo-button')).toHaveCount(0);
  // The "you can restore these" sentence gives way to what the undo did.
  await expect(card.getByTestId('card-undo')).toHaveCount(0);
  // What ran is still said: the call ran, then it was undone.
  await expect(card.getByTestId('outcome-execution')).toHaveText(`Moved ${n} emails to Trash`);

  // The trail: decision, each item trashed, the undo asked, each item restored, its end.
  const trail = card.getByTestId('card-trail');
  await trail.locator('summary').click();
  const undoEntries = trail.locator('[data-testid=trail-entry][data-kind=undo]');
  await expect(undoEntries).toHaveCount(n + 2);
  await expect(undoEntries.first()).toContainText(
    `Undo asked by demo-owner-browser via web: Restore ${n} emails`,
  );
  for (const promo of WEEK_PROMOS) {
    await expect(undoEntries.filter({ hasText: promo })).toContainText(': restored');
  }
  await cardShots(page, id, 'card-undo-done');

  // A card arriving meanwhile (a live event: the page loads its lists again) leaves this
  // trail open with its entries.
  const cli = addDevice('undo-cli', 'control');
  const asked = await page.request.post('/api/chat', {
    headers: { Authorization: `Bearer ${cli.token}` },
    data: { message: 'trash the promo emails from this week' },
  });
  const another = (await asked.json()).approval_id;
  await expect(page.getByTestId(`card-${another}`)).toBeVisible();
  await expect(page.getByTestId(`card-${id}`).getByTestId('card-trail')).toHaveAttribute('open', '');
  await expect(
    page.getByTestId(`card-${id}`).locator('[data-testid=trail-entry][data-kind=undo]'),
  ).toHaveCount(n + 2);
  const rejected = await page.request.post(`/governance/approvals/${another}/respond`, {
    headers: { Authorization: `Bearer ${cli.token}` },
    data: { decision: 'reject' },
  });
  expect(rejected.status()).toBe(200);

  // Once whatever the taps: another surface is told who undid it, and nothing runs again.
  const again = await page.request.post(`/governance/approvals/${id}/undo`, {
    headers: { Authorization: `Bearer ${cli.token}` },
  });
  expect(again.status()).toBe(409);
  expect((await again.json()).error).toContain('already undone by demo-owner-browser via web');

  // A reload keeps it.
  await page.reload();
  await expect(page.getByTestId(`card-${id}`).getByTestId('card-undone')).toHaveAttribute(
    'data-undo',
    'done',
  );
  await expect(page.getByTestId(`card-${id}`).getByTestId('undo-button')).toHaveCount(0);

  expect(problems, 'no console errors or warnings').toEqual([]);
});
