// The owner asks in the browser's chat and answers the card on another surface (the CLI, over
// the HTTP API with a control token): the resumed turn's reply (`run.message`, DESIGN §7)
// appears in the open chat without a reload, once, after the halt message (issue 5).
import { test, expect } from '@playwright/test';
import {
  addDevice,
  askAndOpenCard,
  irisCli,
  undoInChat,
  WEEK_PROMOS,
  watchConsole,
} from './helpers';

test('the chat shows the resumed reply when the card is approved elsewhere', async ({
  page,
  baseURL,
}) => {
  const problems = watchConsole(page);
  const stream = page.waitForResponse((r) => r.url().endsWith('/api/events'));
  const { id, card } = await askAndOpenCard(page);
  await stream;
  const lines = page.getByTestId('chat-line');
  const before = await lines.count();
  // A marker that a reload would wipe.
  await page.evaluate(() => {
    (window as unknown as { irisNoReload: boolean }).irisNoReload = true;
  });

  const { name, token } = addDevice('resume-cli', 'control');
  const printed = irisCli(['approvals', 'approve', id], { IRIS_URL: baseURL!, IRIS_TOKEN: token });
  expect(printed).toContain('Approved');

  const reply = `Done: I moved ${WEEK_PROMOS.length} emails to Trash.`;
  const last = lines.last();
  await expect(last).toContainText(reply);
  await expect(last).toHaveAttribute('data-role', 'assistant');
  // Once, right after the halt message and IRIS's own line saying how the card ended, and
  // the card followed as well.
  await expect(lines.filter({ hasText: reply })).toHaveCount(1);
  await expect(lines).toHaveCount(before + 2);
  await expect(lines.nth(before - 1)).toContainText('I need your approval');
  await expect(lines.nth(before)).toContainText('Approved "Trash');
  await expect(lines.nth(before)).toContainText('to Trash.');
  await expect(card.getByTestId('outcome')).toContainText(`by ${name} via cli`);
  expect(
    await page.evaluate(() => (window as unknown as { irisNoReload?: boolean }).irisNoReload),
  ).toBe(true);

  // Still once after the live refetches settle and after a reload (the server's copy).
  await page.reload();
  await expect(lines.filter({ hasText: reply })).toHaveCount(1);

  await undoInChat(page);
  expect(problems, 'no console errors or warnings').toEqual([]);
});
