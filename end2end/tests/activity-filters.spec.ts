// Searching and filtering Activity's history (app::activity::filters): the search box and the
// status, tool, surface and date filters narrow the answered cards as the owner types and
// chooses, the address keeps them (a reload, the back button and a link without JavaScript show
// the same list), an empty result says so with a way to clear, and a card answered elsewhere
// that does not match stays out of the list. The waiting cards above are never filtered.
//
// The demo server is shared with other specs: every card here holds one word of this run's
// own (in the request, which the search reads), and each assertion is about those cards only.
import { test, expect, type Locator, type Page } from '@playwright/test';
import { addDevice, irisCli, openLive, pageShots, shot, watchConsole } from './helpers';

/** A word no other card holds: the cards this run makes are the ones that match it. */
const TAG = `walrus${Date.now().toString(36)}`;
/** The demo model's reply to Anna (her mail is always in the demo Maildir), tagged. */
const ASK = `reply to Anna that Thursday works ${TAG}`;

/** The answered cards shown, as lines of the history. */
function lines(page: Page): Locator {
  return page.getByTestId('answered-list').locator(':scope > .history-line');
}

/** The history's section: its title, the filters and the answered cards. */
function answered(page: Page): Locator {
  return page.locator('section[aria-labelledby="answered-title"]');
}

/** Card `id` in the history, as a line or open in full. */
function inHistory(page: Page, id: string): Locator {
  return page
    .getByTestId('answered-list')
    .locator(`[data-testid="line-${id}"], [data-testid="card-${id}"]`);
}

test('the history is searched and filtered, and the address keeps the filters', async ({
  page,
  request,
  browser,
  baseURL,
}) => {
  test.setTimeout(180_000);
  const { token } = addDevice('filters', 'control');
  const auth = { authorization: `Bearer ${token}` };
  const cli = { IRIS_URL: baseURL!, IRIS_TOKEN: token };
  const newCard = async (): Promise<string> => {
    const chat = await request.post('/api/chat', { headers: auth, data: { message: ASK } });
    expect(chat.status()).toBe(200);
    const { approval_id: id } = await chat.json();
    expect(id).toBeTruthy();
    return id;
  };
  const rejectOverApi = async (id: string): Promise<void> => {
    const answer = await request.post(`/governance/approvals/${id}/respond`, {
      headers: auth,
      data: { decision: 'reject', reason: 'filters spec' },
    });
    expect(answer.status()).toBe(200);
  };

  // Four answered cards on three surfaces, and one that waits.
  const onCli = await newCard();
  irisCli(['approvals', 'reject', onCli, '--reason', 'not now'], cli);
  const onApi = await newCard();
  await rejectOverApi(onApi);
  const rejectedHere = await newCard();
  const approvedHere = await newCard();
  const waiting = await newCard();
  await openLive(page, `/activity/${rejectedHere}`);
  let card = page.getByTestId(`card-${rejectedHere}`);
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  await openLive(page, `/activity/${approvedHere}`);
  card = page.getByTestId(`card-${approvedHere}`);
  await card.getByTestId('action-button').click();
  await page.getByRole('dialog').getByTestId('dialog-confirm').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'approved');

  const problems = watchConsole(page);
  await openLive(page, '/activity');
  const form = page.getByRole('search', { name: 'Search the answered cards' });
  await expect(form).toHaveCount(1);
  await expect(page.getByTestId('filter-clear')).toHaveCount(0);

  // The search, as the owner types: the list and the address follow after a pause.
  await form.getByLabel('Search').fill(TAG);
  await expect(page).toHaveURL(new RegExp(`/activity\\?q=${TAG}$`));
  await expect(lines(page)).toHaveCount(4);
  // The waiting card stays above, unfiltered.
  await expect(page.getByTestId('pending-list').getByTestId(`card-${waiting}`)).toBeVisible();
  await expect(page.getByTestId('filter-clear')).toBeVisible();

  // The status, then the surface.
  await form.getByLabel('Status').selectOption('rejected');
  await expect(page).toHaveURL(new RegExp(`\\?q=${TAG}&status=rejected$`));
  await expect(lines(page)).toHaveCount(3);
  await expect(page.getByTestId(`line-${approvedHere}`)).toHaveCount(0);
  await form.getByLabel('Answered on').selectOption('cli');
  await expect(page).toHaveURL(new RegExp(`\\?q=${TAG}&status=rejected&surface=cli$`));
  await expect(lines(page)).toHaveCount(1);
  await expect(page.getByTestId(`line-${onCli}`)).toBeVisible();
  await pageShots(page, 'activity-filters');
  await page.emulateMedia({ colorScheme: 'dark' });
  await pageShots(page, 'activity-filters-dark');
  for (const scheme of ['dark', 'light'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    await page.setViewportSize({ width: 320, height: 800 });
    await shot(page, `activity-filters-320-${scheme}`, true);
    await shot(answered(page), `activity-filters-answered-320-${scheme}`);
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  // At 320 px nothing of the form is wider than the screen.
  await page.setViewportSize({ width: 320, height: 800 });
  const box = (await form.boundingBox())!;
  expect(box.x + box.width).toBeLessThanOrEqual(320);
  await page.setViewportSize({ width: 1280, height: 900 });

  // The back button steps back through the filters, the form with it; forward again.
  await page.goBack();
  await expect(page).toHaveURL(new RegExp(`\\?q=${TAG}&status=rejected$`));
  await expect(lines(page)).toHaveCount(3);
  await expect(form.getByLabel('Answered on')).toHaveValue('');
  await expect(form.getByLabel('Status')).toHaveValue('rejected');
  await page.goForward();
  await expect(page).toHaveURL(new RegExp(`\\?q=${TAG}&status=rejected&surface=cli$`));
  await expect(lines(page)).toHaveCount(1);
  await expect(form.getByLabel('Answered on')).toHaveValue('cli');

  // A reload shows the same list, the form as it was.
  await openLive(page, page.url());
  await expect(lines(page)).toHaveCount(1);
  await expect(page.getByTestId(`line-${onCli}`)).toBeVisible();
  await expect(form.getByLabel('Search')).toHaveValue(TAG);
  await expect(form.getByLabel('Status')).toHaveValue('rejected');
  await expect(form.getByLabel('Answered on')).toHaveValue('cli');

  // Live: a card answered elsewhere that does not match (over the API, not the CLI) leaves the
  // waiting list and does not join this one; one that matches does.
  await rejectOverApi(waiting);
  await expect(page.getByTestId(`card-${waiting}`)).toHaveCount(0);
  await expect(inHistory(page, waiting)).toHaveCount(0);
  await expect(lines(page)).toHaveCount(1);
  const lateOnCli = await newCard();
  await expect(page.getByTestId(`card-${lateOnCli}`)).toBeVisible();
  irisCli(['approvals', 'reject', lateOnCli], cli);
  await expect(inHistory(page, lateOnCli)).toHaveCount(1);
  await expect(inHistory(page, waiting)).toHaveCount(0);

  // The tool and the days; a range with nothing in it says so, with a way to clear.
  await form.getByLabel('Answered on').selectOption('');
  await form.getByLabel('Status').selectOption('');
  await form.getByLabel('Tool').selectOption('send_email');
  const today = new Date().toISOString().slice(0, 10);
  await form.getByLabel('From').fill(today);
  await expect(page).toHaveURL(new RegExp(`\\?q=${TAG}&tool=send_email&since=${today}$`));
  await expect(inHistory(page, approvedHere)).toHaveCount(1);
  await expect(inHistory(page, onApi)).toHaveCount(1);
  await form.getByLabel('From').fill('2020-01-01');
  await form.getByLabel('To', { exact: true }).fill('2020-01-02');
  const none = page.getByTestId('no-match');
  await expect(none).toContainText(`No answered cards match \u201c${TAG}\u201d, tool send_email`);
  await expect(lines(page)).toHaveCount(0);
  await shot(answered(page), 'activity-filters-none');
  await none.getByRole('link', { name: 'Clear the filters' }).click();
  await expect(page).toHaveURL(/\/activity$/);
  await expect(form.getByLabel('Search')).toHaveValue('');
  await expect(form.getByLabel('Search')).toBeFocused();
  await expect(inHistory(page, onCli)).toHaveCount(1);
  expect(problems).toEqual([]);

  // Without JavaScript: the filtered list is in the page the server sends, and the form is a
  // plain GET form.
  const plain = await browser.newContext({ javaScriptEnabled: false, baseURL });
  try {
    const noScript = await plain.newPage();
    await noScript.goto(`/activity?q=${TAG}&status=rejected&surface=cli`);
    await expect(lines(noScript)).toHaveCount(2);
    await expect(noScript.getByTestId(`line-${onCli}`)).toBeVisible();
    await expect(noScript.getByTestId(`line-${lateOnCli}`)).toBeVisible();
    await noScript.goto('/activity');
    const plainForm = noScript.getByRole('search');
    await plainForm.getByLabel('Search').fill(TAG);
    await plainForm.getByLabel('Status').selectOption('approved');
    await plainForm.getByRole('button', { name: 'Apply' }).click();
    await expect(noScript).toHaveURL(new RegExp(`\\?q=${TAG}&status=approved`));
    await expect(lines(noScript)).toHaveCount(1);
    await expect(noScript.getByTestId(`line-${approvedHere}`)).toBeVisible();
    // A bad value in the address is left out with a note; the page still lists.
    await noScript.goto(`/activity?q=${TAG}&status=finished&since=someday`);
    await expect(noScript.getByTestId('filter-notes')).toContainText('finished');
    await expect(lines(noScript)).toHaveCount(6);
    // A tool that makes no cards here is kept, and said.
    await noScript.goto(`/activity?q=${TAG}&tool=nope`);
    await expect(noScript.getByTestId('filter-notes')).toContainText('No tool named “nope” makes cards here now');
  } finally {
    await plain.close();
  }
});
