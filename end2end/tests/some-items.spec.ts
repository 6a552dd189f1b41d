// Approving some of a card's items (docs/adr/0122-shaping-a-call.md): once the page is live
// each line of the card has a checkbox, all ticked; unticking one makes the red button "Trash 4
// of 5 emails" and the dialog repeat only the kept lines; with none ticked only Reject remains.
// Approved, the card says "Approved 4 of 5" and marks the line left out; that mail never moved.
// "undo that" then restores the four, so the next spec finds the same promos.
import { test, expect } from '@playwright/test';
import { askAndOpenCard, shot, shotBothWidths, WEEK_PROMOS, watchConsole } from './helpers';

/** The approval id of a card (`card-ID`). */
async function cardId(card: import('@playwright/test').Locator): Promise<string> {
  return (await card.getAttribute('data-testid'))!.replace(/^card-/, '');
}

test('approving some of the items runs the call for those alone', async ({ page }) => {
  const problems = watchConsole(page);
  const { card } = await askAndOpenCard(page);
  const n = WEEK_PROMOS.length;
  const boxes = card.getByRole('checkbox');
  await expect(boxes).toHaveCount(n);
  for (let i = 0; i < n; i++) await expect(boxes.nth(i)).toBeChecked();
  const action = card.getByTestId('action-button');
  await expect(action).toHaveText(`Trash ${n} emails`);
  // A waiting card says when it was asked, and until when it waits.
  await expect(card.getByTestId('card-time')).toContainText('Asked ');
  await expect(card.getByTestId('card-time')).toContainText(' · expires ');

  // The second line is left out: the button follows the count.
  const line = (i: number) => card.locator('label.choice').nth(i);
  const leftOutText = (await line(1).innerText()).trim();
  await line(1).click();
  await expect(boxes.nth(1)).not.toBeChecked();
  await expect(action).toHaveText(`Trash ${n - 1} of ${n} emails`);
  await expect(card.getByTestId('choice-legend')).toContainText(`${n - 1} of ${n} ticked`);
  // The exact call follows the ticks: the left-out id is gone, and the call gets its own hash.
  const asked = await (await page.request.get(`/governance/approvals/${await cardId(card)}`)).json();
  await card.getByTestId('exact-call-toggle').click();
  const exact = card.getByTestId('exact-call');
  await expect(exact).not.toContainText(asked.items[1]);
  await expect(exact).toContainText(asked.items[0]);
  await expect(card.getByTestId('exact-call-hash')).toContainText('made when you approve');
  await card.getByTestId('exact-call-toggle').click();

  // None ticked: only Reject remains, and the card says why.
  for (let i = 0; i < n; i++) if (i !== 1) await line(i).click();
  await expect(action).toBeHidden();
  await expect(card.getByTestId('choice-none')).toBeVisible();
  await expect(card.getByTestId('reject-button')).toBeVisible();
  for (let i = 0; i < n; i++) if (i !== 1) await line(i).click();
  await expect(action).toBeVisible();
  await expect(card.getByTestId('choice-none')).toBeHidden();
  await shotBothWidths(page, () => card, 'some-items-card');
  for (const scheme of ['dark', 'light'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 320, height: 640 });
    await shot(card, `some-items-card-320-${scheme}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });

  // The dialog repeats what will run: the kept lines only.
  await action.click();
  const dialog = page.getByRole('dialog');
  await expect(dialog.getByRole('heading')).toHaveText(`Trash ${n - 1} of ${n} emails?`);
  await expect(dialog.getByRole('listitem')).toHaveCount(n - 1);
  await expect(dialog).not.toContainText(leftOutText);
  await shot(page, 'some-items-dialog');
  await dialog.getByTestId('dialog-confirm').click();
  await expect(dialog).toBeHidden();

  const outcome = card.getByTestId('outcome');
  await expect(outcome).toHaveAttribute('data-status', 'approved');
  const execution = card.getByTestId('outcome-execution');
  await expect(execution).toHaveAttribute('data-execution', 'executed');
  await expect(execution).toContainText(`Approved ${n - 1} of ${n}; left out, not touched:`);
  await expect(execution).toContainText(`Moved ${n - 1} emails to Trash`);
  await expect(card.getByTestId('line-left-out')).toHaveCount(1);
  await expect(card.getByTestId('line-left-out')).toContainText(leftOutText);
  // Answered, the exact call is the call that ran, with its own hash beside the one asked for.
  await card.getByTestId('exact-call-toggle').click();
  await expect(card.getByTestId('exact-call-decided')).toBeVisible();
  await expect(card.getByTestId('exact-call')).not.toContainText(asked.items[1]);
  await card.getByTestId('exact-call-toggle').click();
  await expect(card.getByRole('checkbox')).toHaveCount(0);
  await shotBothWidths(page, () => card, 'some-items-outcome');

  // The chat is told the same, and "undo that" restores the four that moved.
  await expect(
    page.getByTestId('chat-line').filter({ hasText: `You approved ${n - 1} of ${n}` }),
  ).toHaveCount(1);
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill('undo that');
  await page.getByTestId('chat-send').click();
  await expect(page.getByTestId('chat-line').last()).toContainText(`Restored ${n - 1} emails`);
  expect(problems, 'no console errors or warnings').toEqual([]);
});
