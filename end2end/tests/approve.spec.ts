// Approve: ask in chat, follow the link to the card, read it, confirm in the centred dialog,
// then see what ran and the assistant's follow-up. Finally "undo that" puts the mail back, so
// the next spec finds the same promos.
import { test, expect } from '@playwright/test';
import {
  askAndOpenCard,
  expectDestructiveCard,
  expectExactCall,
  shotBothWidths,
  pageShots,
  PHONE,
  DESKTOP,
  WEEK_PROMOS,
  watchConsole,
} from './helpers';

test('approving runs exactly the call on the card and the chat follows up', async ({ page }) => {
  const problems = watchConsole(page);
  const { card } = await askAndOpenCard(page);
  // The tab names the card and how many cards wait.
  await expect(page).toHaveTitle(/^\(\d+\) Trash \d+ emails · IRIS approvals$/);
  await expectDestructiveCard(card);
  await expectExactCall(card);
  await shotBothWidths(page, () => card, 'approve-card');
  await pageShots(page, 'approve-page');

  const words = `Trash ${WEEK_PROMOS.length} emails`;
  const action = card.getByTestId('action-button');

  // Escape cancels; focus returns to the action button; nothing was answered.
  await action.click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  await expect(page.getByTestId('dialog-cancel')).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(action).toBeFocused();
  await expect(card.getByTestId('card-status')).toHaveText('Waiting for you');

  // The dialog repeats the same words, is modal and centred.
  await action.click();
  await expect(dialog).toBeVisible();
  await expect(dialog).toHaveAttribute('aria-modal', 'true');
  await expect(dialog.getByRole('heading')).toHaveText(`${words}?`);
  await expect(dialog.getByTestId('dialog-confirm')).toHaveText(words);
  await expect(dialog.getByRole('listitem')).toHaveCount(WEEK_PROMOS.length);
  for (const size of [DESKTOP, PHONE]) {
    await page.setViewportSize(size);
    const box = (await dialog.boundingBox())!;
    expect(Math.abs(box.x + box.width / 2 - size.width / 2)).toBeLessThan(4);
    expect(Math.abs(box.y + box.height / 2 - size.height / 2)).toBeLessThan(4);
  }
  await page.setViewportSize(DESKTOP);
  await shotBothWidths(page, () => page, 'approve-dialog');

  // Only the dialog's confirm approves.
  await dialog.getByTestId('dialog-confirm').click();
  await expect(dialog).toBeHidden();

  const outcome = card.getByTestId('outcome');
  await expect(outcome).toHaveAttribute('data-status', 'approved');
  await expect(outcome).toContainText('Approved');
  await expect(outcome).toContainText('via web');
  const execution = card.getByTestId('outcome-execution');
  await expect(execution).toHaveAttribute('data-execution', 'executed');
  await expect(execution).toHaveText(`Moved ${WEEK_PROMOS.length} emails to Trash`);
  await expect(card.getByTestId('action-button')).toHaveCount(0);
  await expect(card.getByTestId('reject-button')).toHaveCount(0);
  await shotBothWidths(page, () => card, 'approve-outcome');
  await expect(card.getByTestId('card-undo')).toContainText('restore');

  // The card tells its story: the decision, then each item's outcome, from the audit log.
  const trail = card.getByTestId('card-trail');
  await expect(trail.getByTestId('trail')).toBeHidden();
  await trail.locator('summary').click();
  const entries = trail.getByTestId('trail-entry');
  await expect(entries).toHaveCount(1 + WEEK_PROMOS.length);
  await expect(entries.first()).toHaveAttribute('data-kind', 'decision');
  await expect(entries.first()).toContainText('Approved by demo-owner-browser via web');
  for (const promo of WEEK_PROMOS) {
    await expect(
      trail.locator('[data-testid=trail-entry][data-kind=execution]', { hasText: promo }),
    ).toContainText(': trashed');
  }
  await shotBothWidths(page, () => card, 'approve-trail');

  // The resumed run's reply arrives in the chat.
  await expect(page.getByTestId('chat-line').last()).toContainText(
    `moved ${WEEK_PROMOS.length} emails to Trash`,
  );
  await expect(page.getByTestId('chat-line').last()).toHaveAttribute('data-role', 'assistant');
  // The halt message was amber while the card waited; answered, it is an ordinary line.
  const haltLine = page.getByTestId('chat-line').filter({ hasText: 'I need your approval' });
  await expect(haltLine).toHaveCount(1);
  await expect(haltLine).not.toHaveClass(/\bhalt\b/);

  // A reload keeps the conversation and the answered card.
  await page.reload();
  // The card's end once in IRIS's own words, and the model's reply once.
  await expect(page.getByTestId('chat-line').filter({ hasText: 'Approved "Trash' })).toHaveCount(1);
  await expect(page.getByTestId('chat-line').filter({ hasText: 'Done: I moved' })).toHaveCount(1);
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'approved');

  // Undo (restore_email: write, no approval) puts them back.
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill('undo that');
  await page.getByTestId('chat-send').click();
  await expect(page.getByTestId('chat-line').last()).toContainText(
    `Restored ${WEEK_PROMOS.length} emails`,
  );
  // The card shows it: what came back, by whom, and no more "you can restore" or undo button.
  const undone = card.getByTestId('card-undone');
  await expect(undone).toContainText('Undone by demo-owner-browser via web');
  await expect(undone).toContainText(`Restored ${WEEK_PROMOS.length} emails`);
  await expect(card.getByTestId('card-undo')).toHaveCount(0);
  await expect(card.getByTestId('undo-button')).toHaveCount(0);

  expect(problems, 'no console errors or warnings').toEqual([]);
});
