// A reload right after Send cannot cut the turn (DESIGN §8 "once a card exists it is whole"):
// the turn runs to its end on the server, its card shows up whole, and approving it runs the
// pinned call once. Finally "undo that" puts the mail back for the next spec.
import { test, expect } from '@playwright/test';
import { REQUEST, WEEK_PROMOS, undoInChat, watchConsole, openLive } from './helpers';

/** The ids of the pending rows whose card quotes `REQUEST`. */
async function pendingIds(page: import('@playwright/test').Page): Promise<string[]> {
  const response = await page.request.get('/governance/approvals?status=pending');
  expect(response.status()).toBe(200);
  const { approvals: rows }: { approvals: Array<{ id: string; card: unknown }> } =
    await response.json();
  return rows.filter((r) => JSON.stringify(r.card).includes(REQUEST)).map((r) => r.id);
}

test('a reload right after Send still ends with a whole card that approves once', async ({
  page,
}) => {
  await page.goto('/activity');
  const before = await pendingIds(page);
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill(REQUEST);
  await page.getByTestId('chat-send').click();
  // No waiting for the reply: the page goes away while the turn runs.
  await page.reload();
  const problems = watchConsole(page);

  let id = '';
  await expect
    .poll(async () => {
      const fresh = (await pendingIds(page)).filter((x) => !before.includes(x));
      id = fresh[0] ?? '';
      return fresh.length;
    })
    .toBe(1);

  await openLive(page, `/activity/${id}`);
  const card = page.getByTestId(`card-${id}`);
  await expect(card).toBeVisible();
  await expect(card.getByTestId('card-status')).toHaveText('Waiting for you');
  await expect(card.getByTestId('card-lines').locator('li')).toHaveCount(WEEK_PROMOS.length);
  await card.getByTestId('action-button').click();
  await page.getByRole('dialog').getByTestId('dialog-confirm').click();
  const execution = card.getByTestId('outcome-execution');
  await expect(execution).toHaveAttribute('data-execution', 'executed');
  await expect(execution).toHaveText(`Moved ${WEEK_PROMOS.length} emails to Trash`);

  // Exactly once: one execution entry in the row's audit.
  const audit = await page.request.get(`/api/audit?approval_id=${id}`);
  expect(audit.status()).toBe(200);
  const { entries }: { entries: Array<{ kind: string; item?: string | null }> } =
    await audit.json();
  const executions = entries.filter((e) => e.kind === 'execution');
  expect(executions.length).toBe(WEEK_PROMOS.length);
  expect(new Set(executions.map((e) => e.item)).size).toBe(WEEK_PROMOS.length);

  await undoInChat(page);
  expect(problems, 'no console errors or warnings').toEqual([]);
});
