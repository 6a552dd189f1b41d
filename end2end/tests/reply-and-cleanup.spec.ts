// Issue 4 in the browser: the category clean-up ("delete my promo emails from this week") runs
// without a card and "undo that" brings the batch back; the reply to Anna is a pinned write whose
// card "acts for you" and shows the whole mail, in the dialog too; approving sends it once.
import { test, expect, Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  shotBothWidths,
  pageShots,
  serverDir,
  watchConsole,
  WEEK_PROMOS,
  followLive,
} from './helpers';

async function ask(page: Page, message: string): Promise<void> {
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill(message);
  await page.getByTestId('chat-send').click();
  await expect(
    page.getByTestId('chat-line').filter({ hasText: message }).last(),
  ).toHaveAttribute('data-role', 'owner');
}

function lastAssistantLine(page: Page) {
  return page.locator('[data-testid="chat-line"][data-role="assistant"]').last();
}

test('a category clean-up moves the week promos without a card and undo brings them back', async ({
  page,
}) => {
  const problems = watchConsole(page);
  await page.goto('/activity');
  await ask(page, 'delete my promo emails from this week');
  const reply = lastAssistantLine(page);
  await expect(reply).toContainText(
    `Moved ${WEEK_PROMOS.length} emails (promotions mail from the last 7 days) to Trash`,
  );
  await expect(reply).toContainText('undo that');
  await expect(page.getByTestId('chat-approval-link')).toHaveCount(0);
  await pageShots(page, 'cleanup-chat');

  await ask(page, 'undo that');
  // The line is labelled "IRIS" before the text.
  await expect(lastAssistantLine(page)).toContainText(
    `Restored ${WEEK_PROMOS.length} emails from Trash to where they were.`,
  );

  // Activity's history has a line for the clean-up: it ran without a card, as asked, and says
  // how to undo it.
  await page.reload();
  const action = page.getByTestId('action-line').first();
  await expect(action).toContainText('Without a card, as you asked');
  await expect(action).toContainText(`Moved ${WEEK_PROMOS.length} emails`);
  await expect(action).toContainText('undo that');
  await shotBothWidths(page, () => page.getByTestId('action-lines'), 'cleanup-action-line');
  expect(problems).toEqual([]);
});

test('the reply card acts for you, shows the whole mail, and approving sends it once', async ({
  page,
}) => {
  const problems = watchConsole(page);
  await page.goto('/activity');
  await ask(page, 'reply to Anna that Thursday works');

  const halt = page
    .getByTestId('chat-line')
    .filter({ has: page.getByTestId('chat-approval-link') })
    .last();
  await expect(halt).toContainText('I need your approval to');
  const href = await halt.getByTestId('chat-approval-link').getAttribute('href');
  const id = href!.split('/').pop()!;
  await followLive(page, halt.getByTestId('chat-approval-link'));
  const card = page.getByTestId(`card-${id}`);
  await expect(card).toBeVisible();

  await expect(card.getByTestId('badge-acts')).toHaveText('Acts for you');
  await expect(card.getByTestId('badge-deletes')).toHaveCount(0);
  const lines = card.getByTestId('card-lines');
  await expect(lines).toContainText('To: Anna Weber <anna.weber@example.net>');
  await expect(lines).toContainText('Subject: Re: Dinner on Saturday?');
  await expect(lines).toContainText('Thursday works for me.');
  await expect(lines).toContainText('Robin');
  // The body reads as a mail: one block with its blank lines, no row marks.
  const body = card.getByTestId('card-quote');
  await expect(body).toHaveCount(1);
  await expect(body).toContainText('Thursday works for me.');
  await expect(lines).not.toContainText('│');
  expect(await body.innerText()).toMatch(/\n\s*\n/);
  // A sent mail cannot be taken back, and the card says so before anything goes out.
  await expect(card.getByTestId('card-no-undo')).toHaveText(
    'Once it runs, this cannot be taken back.',
  );
  await shotBothWidths(page, () => card, 'send-card');

  const outbox = path.join(serverDir(), 'demo-outbox');
  const sentBefore = fs.existsSync(outbox) ? fs.readdirSync(outbox).length : 0;

  await card.getByTestId('action-button').click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  // The dialog repeats every line of the mail: nothing that goes out is hidden.
  await expect(dialog).toContainText('Robin');
  await expect(dialog.getByText(/and \d+ more/)).toHaveCount(0);
  await expect(dialog.getByTestId('dialog-no-undo')).toHaveText(
    'This cannot be taken back once it runs.',
  );
  // The body is one block there too, not a bullet per line.
  await expect(dialog.getByTestId('card-quote')).toHaveCount(1);
  await expect(dialog).not.toContainText('│');
  await shotBothWidths(page, () => page, 'send-dialog');
  await dialog.getByTestId('dialog-confirm').click();

  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'approved');
  await expect(card.getByTestId('outcome-execution')).toHaveAttribute(
    'data-execution',
    'executed',
  );
  await expect
    .poll(() => (fs.existsSync(outbox) ? fs.readdirSync(outbox).length : 0))
    .toBe(sentBefore + 1);
  const file = fs
    .readdirSync(outbox)
    .map((f) => path.join(outbox, f))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  const mail = fs.readFileSync(file, 'utf8');
  expect(mail).toMatch(/^To: .*anna\.weber@example\.net/m);
  expect(mail).toMatch(/^Subject: Re: Dinner on Saturday\?/m);
  expect(mail).toMatch(/^In-Reply-To: </m);
  expect(problems).toEqual([]);
});
