// The conversation is the server's: a reload at any moment keeps it. Here the page never gets
// the reply at all (the message reaches the server, which runs the turn to its end, and the
// answer is held back from the page until it reloads, or lost on the way), so whatever the
// page then shows came from the server: the request, and its reply or its card.
import { test, expect, type Page } from '@playwright/test';
import { REQUEST, addDevice, shotBothWidths, watchConsole } from './helpers';

const CHAT_FN = '**/ui/send_chat*';

/**
 * Sends `text`; the server gets it and runs the turn to its end, and the page never hears the
 * answer: it reloads first (`reload`), or its connection drops (`drop`).
 */
async function sendUnheard(page: Page, text: string, ending: 'reload' | 'drop'): Promise<void> {
  let served!: () => void;
  const answered = new Promise<void>((resolve) => (served = resolve));
  let first = true;
  await page.route(CHAT_FN, async (route) => {
    if (!first) {
      await route.continue();
      return;
    }
    first = false;
    await route.fetch();
    served();
    if (ending === 'drop') {
      await route.abort('connectionreset');
    }
    // `reload`: never answered; the page goes away first.
  });
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill(text);
  await page.getByTestId('chat-send').click();
  // The owner's line shows at once, before any answer.
  await expect(ownerLines(page, text)).toHaveCount(1);
  await answered;
  if (ending === 'reload') {
    await page.reload();
  }
}

function ownerLines(page: Page, text: string) {
  return page.locator('[data-testid=chat-line][data-role=owner]', { hasText: text });
}

test('a reload or a lost answer keeps the conversation: the request and its reply or card', async ({
  page,
  request,
}) => {
  await page.goto('/activity');
  // A fresh browser: no conversation yet.
  await expect(page.getByTestId('chat-line')).toHaveCount(0);

  // A new conversation, reloaded before its first reply: the page asks the server.
  await sendUnheard(page, REQUEST, 'reload');
  const problems = watchConsole(page);
  await expect(ownerLines(page, REQUEST)).toHaveCount(1);
  const halt = page.getByTestId('chat-line').filter({ has: page.getByTestId('chat-approval-link') });
  await expect(halt).toHaveCount(1);
  await expect(page.getByTestId('chat-waiting')).toBeHidden();
  await expect(page.getByTestId('chat-send')).toHaveText('Send');

  // The same conversation goes on: a plain reply whose answer is lost on the way. The page
  // cannot know whether the message arrived, so it does not offer to send it again: it waits
  // for the server's end of the turn and shows it.
  await sendUnheard(page, 'hello there', 'drop');
  await expect(page.getByTestId('chat-waiting')).toBeHidden();
  await expect(page.getByTestId('chat-error')).toHaveCount(0);
  await expect(page.getByTestId('chat-input')).toHaveValue('');
  await expect(ownerLines(page, 'hello there')).toHaveCount(1);
  await expect(page.locator('[data-testid=chat-line][data-role=assistant]').last()).toContainText(
    'I’m the demo model',
  );
  await expect(ownerLines(page, REQUEST)).toHaveCount(1);
  await expect(page.getByTestId('chat-line')).toHaveCount(4);
  await shotBothWidths(page, () => page.locator('.chat'), 'chat-after-reload');

  // A second reload changes nothing.
  await page.reload();
  await expect(page.getByTestId('chat-line')).toHaveCount(4);

  // Leave no card waiting for the specs after this one.
  const href = await halt.getByTestId('chat-approval-link').getAttribute('href');
  const id = href!.split('/').pop()!;
  const { token } = addDevice('chat-reload', 'control');
  const answer = await request.post(`/governance/approvals/${id}/respond`, {
    headers: { authorization: `Bearer ${token}` },
    data: { decision: 'reject', reason: 'only checking the chat' },
  });
  expect(answer.status()).toBe(200);
  // The one expected complaint: the browser's own line about the dropped connection.
  expect(
    problems.filter((p) => !p.includes('ERR_CONNECTION_RESET')),
    'no other console errors or warnings',
  ).toEqual([]);
});

test('a message still waiting after a reload shows as sent until its turn ends', async ({
  page,
}) => {
  await page.goto('/activity');
  await expect(page.getByTestId('chat-input')).toBeEditable();
  // As a page that reloaded while the server still ran the turn finds it: the conversation
  // and the message kept in the browser, the server's conversation without it yet.
  const conversation = 'c-waiting-' + Date.now();
  await page.evaluate((id) => {
    localStorage.setItem('iris.conversation_id', id);
    localStorage.setItem(
      'iris.pending_turn',
      JSON.stringify({ conversation_id: id, text: 'hello there', seen: 0 }),
    );
  }, conversation);
  await page.reload();
  const problems = watchConsole(page);
  await expect(ownerLines(page, 'hello there')).toHaveCount(1);
  await expect(page.getByTestId('chat-waiting')).toHaveText('Sent. Waiting for IRIS to answer…');
  await expect(page.getByTestId('chat-send')).toHaveText('Sending…');
  await expect(page.getByTestId('chat-send')).toBeDisabled();
  await shotBothWidths(page, () => page.locator('.chat'), 'chat-waiting');

  // The turn ends on the server (here another surface of the owner's sends it into that
  // conversation): the page picks up its end by itself.
  const { token } = addDevice('chat-waiting', 'control');
  const sent = await page.request.post('/api/chat', {
    headers: { authorization: `Bearer ${token}` },
    data: { message: 'hello there', conversation_id: conversation },
  });
  expect(sent.status()).toBe(200);
  await expect(page.getByTestId('chat-waiting')).toBeHidden();
  await expect(page.locator('[data-testid=chat-line][data-role=assistant]')).toContainText(
    'I’m the demo model',
  );
  await expect(ownerLines(page, 'hello there')).toHaveCount(1);
  await expect(page.getByTestId('chat-send')).toHaveText('Send');
  expect(await page.evaluate(() => localStorage.getItem('iris.pending_turn'))).toBeNull();
  expect(problems, 'no console errors or warnings').toEqual([]);
});

test('a send that fails on the way says IRIS may not have it, before and after a reload', async ({
  page,
}) => {
  await page.goto('/activity');
  await expect(page.getByTestId('chat-input')).toBeEditable();
  // The connection drops: the message may or may not have reached the server, so the page
  // waits for its turn rather than offer it twice, and says it does not know.
  await page.route('**/ui/send_chat*', (route) => route.abort('connectionreset'));
  await page.getByTestId('chat-input').fill('show this week’s mail');
  await page.getByTestId('chat-send').click();
  const unsure =
    'The connection failed while sending, so IRIS may not have your message. Waiting to see whether it answers…';
  await expect(page.getByTestId('chat-waiting')).toHaveText(unsure);
  await expect(page.getByTestId('chat-waiting')).not.toContainText('Sent.');
  await expect(page.getByTestId('chat-send')).toBeDisabled();
  const kept = await page.evaluate(() => localStorage.getItem('iris.pending_turn'));
  expect(JSON.parse(kept!)).toMatchObject({ text: 'show this week’s mail', unconfirmed: true });
  await page.unroute('**/ui/send_chat*');
  await page.reload();
  await expect(page.getByTestId('chat-waiting')).toHaveText(unsure);
});
