// Activity after long use (runs last: it leaves many answered cards behind). The page shows
// every waiting card and the newest 50 answered ones; "Older cards" loads the next page, once
// per click, until there is none; an opened line closes again; an unknown card id says so
// plainly.
import { test, expect } from '@playwright/test';
import { addDevice, shot, shotBothWidths, watchConsole, openLive } from './helpers';

// The cards it makes are replies to Anna: her mail stays in the Maildir whatever the specs
// before did (stale.spec.ts moves the week's promos aside, and the store may miss them until
// its next mail sync, up to a minute later).
const REQUEST = 'reply to Anna that Thursday works';

const PAGE = 50;

test('older answered cards load a page at a time; an unknown card says not found', async ({
  page,
  request,
}) => {
  test.setTimeout(180_000);
  const { token } = addDevice('older-cards', 'control');
  const auth = { authorization: `Bearer ${token}` };
  const answered = async (): Promise<number> => {
    let n = 0;
    let before: string | null = null;
    do {
      const url: string =
        '/governance/approvals?status=answered&limit=200' + (before ? `&before=${before}` : '');
      const response = await request.get(url, { headers: auth });
      expect(response.status()).toBe(200);
      const body = await response.json();
      n += body.approvals.length;
      before = body.next;
    } while (before);
    return n;
  };
  // A card that waits while newer ones are answered: answered later (in another tab), its
  // place is among the older pages, by when it was made.
  const waiting = await request.post('/api/chat', { headers: auth, data: { message: REQUEST } });
  expect(waiting.status()).toBe(200);
  const { approval_id: late } = await waiting.json();
  expect(late).toBeTruthy();
  // Enough answered cards newer than it for a page and a bit.
  for (let i = 0; i < PAGE + 7; i++) {
    const chat = await request.post('/api/chat', { headers: auth, data: { message: REQUEST } });
    expect(chat.status()).toBe(200);
    const { approval_id: id } = await chat.json();
    expect(id).toBeTruthy();
    const reject = await request.post(`/governance/approvals/${id}/respond`, {
      headers: auth,
      data: { decision: 'reject', reason: 'seeding older cards' },
    });
    expect(reject.status()).toBe(200);
  }
  const total = await answered();
  expect(total).toBeGreaterThan(PAGE);

  const problems = watchConsole(page);
  await openLive(page, '/activity');
  const list = page.getByTestId('answered-list');
  const cards = list.locator(':scope > .history-line');
  await expect(cards).toHaveCount(PAGE);
  const older = page.getByTestId('older');
  await expect(older).toHaveText('Older cards');
  // The seeded cards' resumed runs may still send live events, which draw the list (and this
  // button) anew right after the load: scroll to whichever button is there.
  await expect(async () => {
    await older.scrollIntoViewIfNeeded({ timeout: 2_000 });
  }).toPass({ timeout: 15_000 });
  await shotBothWidths(page, () => page.locator('.older'), 'activity-older');
  // On a phone a line's title has the whole width, its badges under it.
  await page.setViewportSize({ width: 375, height: 800 });
  const line = cards.first();
  const title = (await line.locator('.history-title').boundingBox())!;
  const badge = (await line.locator('.history-badges').boundingBox())!;
  expect(badge.y).toBeGreaterThanOrEqual(title.y + title.height - 1);
  await shot(cards.nth(1), 'history-lines-375');
  await page.setViewportSize({ width: 1280, height: 900 });

  // Two quick taps load one page, not two copies of it.
  await older.dblclick();
  await expect(cards).toHaveCount(Math.min(total, 2 * PAGE));
  const ids = await cards.evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
  expect(new Set(ids).size).toBe(ids.length);

  // The waiting card answered in another tab leaves "Waiting" and shows once among the older
  // cards loaded, in its place, without a reload (before, it vanished until a reload).
  await expect(page.getByTestId(`card-${late}`)).toBeVisible();
  const shown = await cards.count();
  const answeredLate = await request.post(`/governance/approvals/${late}/respond`, {
    headers: auth,
    data: { decision: 'reject', reason: 'answered in another tab' },
  });
  expect(answeredLate.status()).toBe(200);
  // Shown waiting on this page, it stays open in full once answered.
  const lateCard = list.getByTestId(`card-${late}`);
  await expect(lateCard).toHaveCount(1);
  await expect(lateCard).toHaveAttribute('data-status', 'rejected');
  await expect(page.getByTestId('pending-list').getByTestId(`card-${late}`)).toHaveCount(0);
  await expect(cards).toHaveCount(shown);
  const after = await cards.evaluateAll((els) => els.map((e) => e.getAttribute('data-testid')));
  expect(new Set(after).size).toBe(after.length);

  // A line says what happened and opens into its whole card in place.
  const first = cards.first();
  const lineId = (await first.getAttribute('data-testid'))!.replace(/^line-/, '');
  await expect(first).toContainText('Rejected');
  await first.click();
  const opened = list.getByTestId(`card-${lineId}`);
  await expect(opened).toBeVisible();
  await expect(opened).toContainText('seeding older cards');
  // The keyboard's focus follows into the opened card, and "Show less" closes it back to its
  // line, with the focus on the line.
  await expect(opened).toBeFocused();
  await list.getByTestId(`close-${lineId}`).click();
  await expect(opened).toHaveCount(0);
  await expect(list.getByTestId(`line-${lineId}`)).toBeFocused();
  if (total <= 2 * PAGE) {
    await expect(older).toHaveCount(0);
  }

  await page.goto('/activity/no-such-card');
  const missing = page.getByTestId('card-not-found');
  await expect(missing).toBeVisible();
  await expect(missing).toContainText('No card has the id “no-such-card”');
  expect(problems).toEqual([]);
});
