// Reject: one tap, no dialog; the card says rejected and the chat says nothing was changed.
import { test, expect } from '@playwright/test';
import { askAndOpenCard, expectDestructiveCard, expectExactCall, shotBothWidths, watchConsole } from './helpers';

test('rejecting takes one tap and nothing changes', async ({ page }) => {
  const problems = watchConsole(page);
  const { card } = await askAndOpenCard(page);
  await expectDestructiveCard(card);
  await expectExactCall(card);
  await shotBothWidths(page, () => card, 'reject-card');

  // The dialog exists for the action button; take its picture, then cancel.
  await card.getByTestId('action-button').click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  await shotBothWidths(page, () => page, 'reject-dialog');
  await dialog.getByTestId('dialog-cancel').click();
  await expect(dialog).toBeHidden();

  // One tap: no dialog.
  await card.getByTestId('reject-button').click();
  await expect(dialog).toHaveCount(0);

  const outcome = card.getByTestId('outcome');
  await expect(outcome).toHaveAttribute('data-status', 'rejected');
  await expect(outcome).toContainText('Rejected');
  await expect(outcome).toContainText('Nothing was changed');
  await expect(card.getByTestId('action-button')).toHaveCount(0);
  // Nothing ran, so there is nothing to undo.
  await expect(card.getByTestId('card-undo')).toHaveCount(0);
  await shotBothWidths(page, () => card, 'reject-outcome');

  const last = page.getByTestId('chat-line').last();
  await expect(last).toHaveAttribute('data-role', 'assistant');
  await expect(last).toContainText('Nothing was changed');

  expect(problems, 'no console errors or warnings').toEqual([]);
});
