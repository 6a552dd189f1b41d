// A late answer: the card is open in the browser while another surface (the CLI, as device
// "phone") approves it first. The browser's Reject then shows who decided, where and when
// (409) on the card, and the card switches to that outcome. Live updates are blocked here so
// the browser still shows the card as pending when Reject is tapped.
import { test, expect } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { askAndOpenCard, serverDatabaseUrl, shotBothWidths, WEEK_PROMOS } from './helpers';

const IRIS = process.env.IRIS_E2E_IRIS_BIN ?? path.resolve(__dirname, '..', '..', 'target', 'debug', 'iris');

function iris(args: string[], env: Record<string, string>): string {
  return execFileSync(IRIS, args, { env: { ...process.env, ...env }, encoding: 'utf8' });
}

test('a card answered elsewhere first shows who decided', async ({ page, baseURL }) => {
  await page.route('**/api/events', (route) => route.abort());
  const { id, card } = await askAndOpenCard(page);

  const databaseUrl = serverDatabaseUrl();
  const added = iris(['devices', 'add', '--name', 'phone', '--scope', 'control'], {
    IRIS_DATABASE_URL: databaseUrl,
  });
  const token = added.trim().split('\n').pop()!.trim();
  iris(['approvals', 'approve', id], { IRIS_URL: baseURL!, IRIS_TOKEN: token });

  // The browser has not heard; its Reject loses and says why.
  await expect(card.getByTestId('card-status')).toHaveText('Waiting for you');
  await card.getByTestId('reject-button').click();
  const error = card.getByTestId('card-error');
  await expect(error).toContainText('already approved by phone via cli');
  const outcome = card.getByTestId('outcome');
  await expect(outcome).toHaveAttribute('data-status', 'approved');
  await expect(outcome).toContainText('by phone via cli');
  await expect(card.getByTestId('outcome-execution')).toHaveText(
    `Moved ${WEEK_PROMOS.length} emails to Trash`,
  );
  await shotBothWidths(page, () => card, 'late-answer-card');

  // Put the mail back for the next spec.
  const input = page.getByTestId('chat-input');
  await input.fill('undo that');
  await page.getByTestId('chat-send').click();
  await expect(page.getByTestId('chat-line').last()).toContainText(
    `Restored ${WEEK_PROMOS.length} emails`,
  );
});
