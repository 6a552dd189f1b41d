// Reject: one tap, no dialog; the card says rejected and the chat says nothing was changed.
// Afterwards the card offers "Tell IRIS why (optional)", once: the card shows the reason and
// IRIS is told in the chat (docs/adr/0125-reason-after-reject.md).
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

  // The reason, after the tap: optional, once; the card shows it and IRIS is told.
  const reason = card.getByTestId('reason-input');
  await expect(reason).toBeVisible();
  await expect(card.getByTestId('reason-send')).toBeDisabled();
  await reason.fill('I still read those newsletters');
  await shotBothWidths(page, () => card, 'reject-reason');
  await card.getByTestId('reason-send').click();
  await expect(outcome).toContainText('Reason: I still read those newsletters');
  await expect(card.getByTestId('reason-form')).toHaveCount(0);
  await expect(
    page.getByTestId('chat-line').filter({ hasText: 'because: I still read those newsletters' }),
  ).toHaveAttribute('data-role', 'owner');
  await expect(page.getByTestId('chat-line').last()).toContainText('Thank you for telling me why');

  expect(problems, 'no console errors or warnings').toEqual([]);
});
