// The confirm dialog by keyboard alone (issue 5): it is a labelled modal dialog; focus moves
// into it when it opens and back to the button that opened it when it closes; Tab and Shift+Tab
// stay inside; Escape and Cancel close it without answering; Enter and Space open it and
// confirm. Live events that redraw the page do not take the focus away. approve.spec.ts covers the mouse, the words and the centring.
import { test, expect, type Locator, type Page } from '@playwright/test';
import {
  addDevice,
  askAndOpenCard,
  irisCli,
  undoInChat,
  WEEK_PROMOS,
  watchConsole,
} from './helpers';

const WORDS = `Trash ${WEEK_PROMOS.length} emails`;

/** Tab (or Shift+Tab) `times` times and expect focus on `where` after each press in turn. */
async function tabThrough(page: Page, key: 'Tab' | 'Shift+Tab', where: Locator[]): Promise<void> {
  for (const target of where) {
    await page.keyboard.press(key);
    await expect(target).toBeFocused();
  }
}

for (const confirmKey of ['Enter', 'Space'] as const) {
  test(`keyboard only: open with the keyboard, focus stays inside, confirm with ${confirmKey}`, async ({
    page,
    baseURL,
  }) => {
    const problems = watchConsole(page);
    const { card } = await askAndOpenCard(page);
    const action = card.getByTestId('action-button');
    const status = card.getByTestId('card-status');

    // From Reject, Tab reaches the action button; Enter opens the dialog.
    await card.getByTestId('reject-button').focus();
    await page.keyboard.press('Tab');
    await expect(action).toBeFocused();
    await expect(action).toHaveAttribute('aria-haspopup', 'dialog');

    // Every live event draws the page anew; the focus stays on the action button. Another
    // surface asks for a card (approval.requested) and rejects it (approval.responded).
    const cli = { IRIS_URL: baseURL!, IRIS_TOKEN: addDevice('keyboard-cli', 'control').token };
    const asked = irisCli(['chat', 'reply to Anna that Thursday works'], cli);
    const other = /\/activity\/([A-Za-z0-9-]+)/.exec(asked)?.[1];
    expect(other, asked).toBeTruthy();
    await expect(page.getByTestId(`card-${other}`)).toBeVisible();
    await expect(action).toBeFocused();
    irisCli(['approvals', 'reject', other!], cli);
    await expect(page.getByTestId(`card-${other}`).getByTestId('outcome')).toHaveAttribute(
      'data-status',
      'rejected',
    );
    await expect(action).toBeFocused();

    await page.keyboard.press('Enter');

    // A modal dialog named by its title and described by what it will do.
    const dialog = page.getByRole('dialog', { name: `${WORDS}?` });
    await expect(dialog).toBeVisible();
    await expect(dialog).toHaveAttribute('aria-modal', 'true');
    const describedBy = await dialog.getAttribute('aria-describedby');
    expect(describedBy).toBeTruthy();
    await expect(page.locator(`[id="${describedBy}"]`)).toContainText('This deletes data.');
    const cancel = dialog.getByRole('button', { name: 'Cancel' });
    const confirm = dialog.getByRole('button', { name: WORDS });

    // Focus moved in, to the safe choice.
    await expect(cancel).toBeFocused();
    // Tab and Shift+Tab go round inside the dialog, never to the page behind it.
    await tabThrough(page, 'Tab', [confirm, cancel, confirm]);
    await tabThrough(page, 'Shift+Tab', [cancel, confirm, cancel]);

    // A click on the dialog's text or on the backdrop does not let focus escape: Tab and
    // Escape still work inside.
    await dialog.locator('.dialog-title').click();
    await page.keyboard.press('Tab');
    await expect(dialog.getByRole('button')).toHaveCount(2);
    await expect(dialog.locator(':focus')).toHaveCount(1);
    await page.mouse.click(5, 5);
    await expect(dialog).toBeVisible();
    await page.keyboard.press('Tab');
    await expect(dialog.locator(':focus')).toHaveCount(1);
    await page.keyboard.press('Shift+Tab');
    await expect(dialog.locator(':focus')).toHaveCount(1);

    // Escape cancels: closed, focus back on the action button, nothing answered.
    await page.keyboard.press('Escape');
    await expect(dialog).toBeHidden();
    await expect(action).toBeFocused();
    await expect(status).toHaveText('Waiting for you');

    // Space opens it too; Cancel by keyboard closes it the same way.
    await page.keyboard.press('Space');
    await expect(dialog).toBeVisible();
    await expect(cancel).toBeFocused();
    await page.keyboard.press('Enter');
    await expect(dialog).toBeHidden();
    await expect(action).toBeFocused();
    await expect(status).toHaveText('Waiting for you');

    // Open, Tab to the confirm button, and confirm with the key under test.
    await page.keyboard.press('Enter');
    await expect(cancel).toBeFocused();
    await page.keyboard.press('Tab');
    await expect(confirm).toBeFocused();
    await page.keyboard.press(confirmKey);
    await expect(dialog).toBeHidden();
    const outcome = card.getByTestId('outcome');
    await expect(outcome).toHaveAttribute('data-status', 'approved');
    await expect(card.getByTestId('outcome-execution')).toHaveText(
      `Moved ${WEEK_PROMOS.length} emails to Trash`,
    );
    // The button that opened the dialog is gone: focus lands on the answered card, where a
    // screen reader reads the outcome, not on the top of the page.
    await expect(card).toBeFocused();

    await undoInChat(page);
    expect(problems, 'no console errors or warnings').toEqual([]);
  });
}
