// Editing a call before approving it (docs/adr/0122-shaping-a-call.md): the reply to Anna's
// card offers "Edit" once the page is live; the owner changes the body, reviews it in the
// confirm dialog (what was there, what will go out), and approving sends the edited mail once.
// An edit to an address nobody gave is refused on the card, which keeps waiting.
import { test, expect } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { askAndFollow, serverDir, shot, shotBothWidths, watchConsole } from './helpers';

const EDITED = 'Thursday works, and I will bring the salad.\n\nRobin';

test('an edited reply is reviewed, then sent once as edited', async ({ page }) => {
  const problems = watchConsole(page);
  const { card } = await askAndFollow(page, 'reply to Anna that Thursday works');
  await expect(card.getByTestId('badge-acts')).toHaveText('Acts for you');

  await card.getByTestId('edit-button').click();
  const form = card.getByTestId('card-edit');
  await expect(form).toBeVisible();
  await expect(card.getByTestId('edit-button')).toBeHidden();
  // While editing, Review is the way to approve: the card's own action is not offered.
  await expect(card.getByTestId('action-button')).toBeHidden();
  await expect(card.getByTestId('reject-button')).toBeVisible();
  await expect(form.getByTestId('edit-body')).toHaveValue(/Thursday works for me\./);

  // An address nobody gave is refused at Review, naming it, before any confirm step: no
  // dialog opens and the card keeps waiting.
  await form.getByTestId('edit-to').fill('stranger@invented.example');
  await form.getByTestId('edit-review').click();
  await expect(card.getByTestId('card-error')).toContainText('stranger@invented.example');
  let dialog = page.getByRole('dialog');
  await expect(dialog).toHaveCount(0);
  await expect(card.getByTestId('card-status')).toHaveText('Waiting for you');

  // The body, edited: the dialog shows what was there and what will go out.
  await form.getByTestId('edit-to').fill('anna.weber@example.net');
  await form.getByTestId('edit-body').fill(EDITED);
  await shotBothWidths(page, () => card, 'edit-card');
  for (const scheme of ['dark', 'light'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 320, height: 640 });
    await shot(card, `edit-card-320-${scheme}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await form.getByTestId('edit-review').click();
  dialog = page.getByRole('dialog');
  await expect(dialog).toContainText('Body (edited by you):');
  await expect(dialog).toContainText('I will bring the salad.');
  await expect(dialog).not.toContainText('To (edited by you)');
  await shot(page, 'edit-dialog');

  const outbox = path.join(serverDir(), 'demo-outbox');
  const sentBefore = fs.existsSync(outbox) ? fs.readdirSync(outbox).length : 0;
  await dialog.getByTestId('dialog-confirm').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'approved');
  const execution = card.getByTestId('outcome-execution');
  await expect(execution).toHaveAttribute('data-execution', 'executed');
  await expect(execution).toContainText('Approved as you edited it (body).');
  // The card's lines are the model's version, frozen with it: the outcome says what went out.
  await expect(card.getByTestId('outcome-edited')).toContainText('Body, as you edited it:');
  await expect(card.getByTestId('outcome-edited')).toContainText('I will bring the salad.');
  await expect
    .poll(() => (fs.existsSync(outbox) ? fs.readdirSync(outbox).length : 0))
    .toBe(sentBefore + 1);
  const file = fs
    .readdirSync(outbox)
    .map((f) => path.join(outbox, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  const mail = fs.readFileSync(file, 'utf8');
  expect(mail).toContain('I will bring the salad.');
  await shotBothWidths(page, () => card, 'edit-outcome');
  // The one 400 is the refused edit above (the browser logs every refused request).
  expect(problems.filter((p) => !p.includes('status of 400'))).toEqual([]);
  expect(problems.filter((p) => p.includes('status of 400'))).toHaveLength(1);
});
