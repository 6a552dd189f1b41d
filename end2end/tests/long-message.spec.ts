// A message too long for the chat: a counter shows near the limit; past it Send is off and the
// page says by how much to shorten it; the server refuses one anyway with a plain 400 and
// nothing happens.
import { test, expect } from '@playwright/test';
import { addDevice, shotBothWidths, watchConsole } from './helpers';

const MAX = 4000;

test('the chat counts down to its limit and refuses a longer message plainly', async ({
  page,
  request,
}) => {
  const problems = watchConsole(page);
  await page.goto('/activity');
  const input = page.getByTestId('chat-input');
  const count = page.getByTestId('chat-count');
  const send = page.getByTestId('chat-send');
  await expect(input).toBeEditable();
  // Nothing to send: Send is off (spaces are nothing).
  await expect(send).toBeDisabled();
  await input.fill('   ');
  await expect(send).toBeDisabled();

  await input.fill('a'.repeat(100));
  await expect(count).toBeHidden();
  await input.fill('a'.repeat(3700));
  await expect(count).toBeVisible();
  await expect(count).toHaveText(`3700 of ${MAX} characters`);
  await expect(send).toBeEnabled();

  await input.fill('a'.repeat(MAX + 25));
  await expect(count).toHaveText(
    `${MAX + 25} characters: at most ${MAX} can be sent. Shorten it by 25 to send it.`,
  );
  await expect(send).toBeDisabled();
  await shotBothWidths(page, () => page.locator('.chat-form').locator('..'), 'chat-too-long');
  // Enter does not send it either: the conversation stays as it was.
  const lines = await page.getByTestId('chat-log').locator('li').count();
  await input.press('Enter');
  await expect(page.getByTestId('chat-log').locator('li')).toHaveCount(lines);
  await input.fill('');

  // The API says the same in a sentence, with a 400.
  const { token } = addDevice('long-message', 'control');
  const refused = await request.post('/api/chat', {
    headers: { authorization: `Bearer ${token}` },
    data: { message: 'b'.repeat(5000) },
  });
  expect(refused.status()).toBe(400);
  expect((await refused.json()).error).toBe(
    'The message is 5000 characters long; at most 4000 are accepted, so nothing was done.',
  );
  expect(problems).toEqual([]);
});
