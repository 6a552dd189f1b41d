// The server's HTML is usable before the wasm arrives (seconds on a slow phone, BENCHMARKS.md
// "Fast 3G"): a card is answered through its own form (Reject posts it; the action button
// opens the form dialog, whose confirm posts it), its undo button posts its undo form, and a
// `<details>` opens without any script. A toggle the owner opens in those
// seconds stays open when the app wakes up: "Show exact call" on a waiting card, "What
// happened" on an answered one; a history line is a link to its card's page. The wasm is held
// back by the test itself (no timing guess): the page is fully there, the toggle is opened,
// then the wasm is let through.
import { test, expect, type Page } from '@playwright/test';
import { askAndOpenCard, openLive, WEEK_PROMOS, watchConsole } from './helpers';

/**
 * Opens `url` with the wasm held back, runs `before` on the page as the server sent it, then
 * lets the wasm through and waits until the app is hydrated (the chat input is editable only
 * then).
 */
async function withWasmHeld(page: Page, url: string, before: () => Promise<void>): Promise<void> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = 0;
  await page.route('**/*.wasm', async (route) => {
    held += 1;
    await released;
    // A request of a page the test navigated away from is gone by then: nothing to continue.
    await route.continue().catch(() => undefined);
  });
  await page.goto(url);
  await expect(page.getByTestId('chat-input')).not.toBeEditable();
  await before();
  // Still not hydrated: what `before` did was the browser's own behaviour.
  await expect(page.getByTestId('chat-input')).not.toBeEditable();
  release();
  await expect(page.getByTestId('chat-input')).toBeEditable();
  expect(held, 'the wasm was requested and held').toBeGreaterThan(0);
  await page.unroute('**/*.wasm');
}

test('a toggle opened before hydration stays open after it', async ({ page }) => {
  const problems = watchConsole(page);
  const { id } = await askAndOpenCard(page);
  const card = page.getByTestId(`card-${id}`);
  const toggle = card.getByTestId('exact-call-toggle');
  const call = card.getByTestId('exact-call');

  await withWasmHeld(page, `/activity/${id}`, async () => {
    await expect(toggle).toHaveText('Show exact call');
    await toggle.click();
    await expect(call).toBeVisible();
  });
  await expect(call).toBeVisible();
  // The app took the element's state: its label follows, and closing it works.
  await expect(toggle).toHaveText('Hide exact call');
  await toggle.click();
  await expect(call).toBeHidden();
  await expect(toggle).toHaveText('Show exact call');

  // Answered, the card has its trail; opened before hydration, it stays open and loads.
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  const trail = card.getByTestId('card-trail');
  await withWasmHeld(page, `/activity/${id}`, async () => {
    await trail.locator('summary').click();
    await expect(trail).toHaveJSProperty('open', true);
  });
  await expect(trail).toHaveJSProperty('open', true);
  await expect(trail.getByTestId('trail-entry').first()).toBeVisible();
  await expect(trail.getByTestId('trail-entry').first()).toHaveAttribute('data-kind', 'decision');
  await expect(trail.getByTestId('trail-entry').first()).toContainText('Rejected by');

  // Before hydration, a history line is a link to its card's own page.
  await withWasmHeld(page, '/activity', async () => {
    await page.getByTestId(`line-${id}`).click();
    await expect(page).toHaveURL(new RegExp(`/activity/${id}(#card-${id})?$`));
    await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  });

  expect(problems, 'no console errors or warnings').toEqual([]);
});

test('before the page is live, a card is approved through its form dialog', async ({ page }) => {
  const problems = watchConsole(page);
  const { id } = await askAndOpenCard(page);
  const card = page.getByTestId(`card-${id}`);
  const dialog = page.getByTestId('form-dialog');
  const action = `Trash ${WEEK_PROMOS.length} emails`;

  await withWasmHeld(page, `/activity/${id}`, async () => {
    // The action button opens the dialog with the card's words; Cancel sends nothing.
    await card.getByTestId('action-button').click();
    await expect(dialog).toBeVisible();
    await expect(page.getByRole('dialog', { name: `${action}?` })).toBeVisible();
    await expect(dialog).toContainText('This deletes data.');
    for (const promo of WEEK_PROMOS) await expect(dialog).toContainText(promo);
    await expect(dialog.getByTestId('form-dialog-cancel')).toBeFocused();
    await dialog.getByTestId('form-dialog-cancel').click();
    await expect(dialog).toBeHidden();
    await expect(page).toHaveURL(new RegExp(`/activity/${id}(#card-${id})?$`));
    await expect(card.getByTestId('card-status')).toHaveText('Waiting for you');

    // Its confirm approves: the card's page comes back with the outcome, still without wasm.
    await card.getByTestId('action-button').click();
    await expect(dialog.getByTestId('form-dialog-confirm')).toHaveText(action);
    await dialog.getByTestId('form-dialog-confirm').click();
    // The answered card's page opens on the card, not at the top of Activity.
    await expect(page).toHaveURL(new RegExp(`/activity/${id}#card-${id}$`));
    await expect(card).toBeInViewport();
    await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'approved');
    await expect(card.getByTestId('outcome')).toContainText('via web');
  });
  // Live: the pinned call ran once.
  await expect(card.getByTestId('outcome-execution')).toHaveAttribute('data-execution', 'executed');

  // Its undo button works before the page is live too (the card's undo form), and puts the
  // mail back for the specs after this one; a second post of the form changes nothing more.
  await withWasmHeld(page, `/activity/${id}`, async () => {
    await card.getByTestId('undo-button').click();
    await expect(page).toHaveURL(new RegExp(`/activity/${id}(#card-${id})?$`));
    await expect(card.getByTestId('card-undone')).toHaveAttribute('data-undo', 'done');
    await expect(card.getByTestId('undo-button')).toHaveCount(0);
  });
  await expect(card.getByTestId('card-undone')).toContainText(
    `Restored ${WEEK_PROMOS.length} emails from Trash to where they were.`,
  );
  expect(problems, 'no console errors or warnings').toEqual([]);
});

test('before the page is live, Reject answers through the card form', async ({ page }) => {
  const problems = watchConsole(page);
  const { id } = await askAndOpenCard(page);
  const card = page.getByTestId(`card-${id}`);
  await withWasmHeld(page, '/activity', async () => {
    await card.getByTestId('reject-button').click();
    await expect(page).toHaveURL(new RegExp(`/activity/${id}(#card-${id})?$`));
    await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  });
  await expect(card.getByTestId('outcome-execution')).toHaveAttribute('data-execution', 'none');
  expect(problems, 'no console errors or warnings').toEqual([]);
});

test('a form answer to a card answered meanwhile says so on the card', async ({ page }) => {
  const { id } = await askAndOpenCard(page);
  const card = page.getByTestId(`card-${id}`);
  await withWasmHeld(page, `/activity/${id}`, async () => {
    await card.getByTestId('action-button').click();
    // Another tab of the owner rejects it while this one's dialog is open.
    const other = await page.context().newPage();
    await openLive(other, `/activity/${id}`);
    await other.getByTestId(`card-${id}`).getByTestId('reject-button').click();
    await expect(other.getByTestId(`card-${id}`).getByTestId('outcome')).toHaveAttribute(
      'data-status',
      'rejected',
    );
    await other.close();
    await page.getByTestId('form-dialog-confirm').click();
    // The refusal is not in the address (anyone can write one): the server's one-time cookie.
    await expect(page).toHaveURL(new RegExp(`/activity/${id}(#card-${id})?$`));
    await expect(card.getByTestId('card-error')).toContainText('already');
    await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  });
  await expect(card.getByTestId('card-error')).toContainText('already');
  // Shown once: a reload shows the card as it stands, without the old refusal.
  await page.reload();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  await expect(card.getByTestId('card-error')).toHaveCount(0);
});

test('a form dialog open when the page goes live stays, and the live page confirms its own way', async ({
  page,
}) => {
  const problems = watchConsole(page);
  const { id } = await askAndOpenCard(page);
  const card = page.getByTestId(`card-${id}`);
  const formDialog = page.getByTestId('form-dialog');
  await withWasmHeld(page, `/activity/${id}`, async () => {
    await card.getByTestId('action-button').click();
    await expect(formDialog).toBeVisible();
  });
  // Hydrated under the owner's finger: the dialog is still there and still cancels.
  await expect(formDialog).toBeVisible();
  await formDialog.getByTestId('form-dialog-cancel').click();
  await expect(formDialog).toBeHidden();

  // A page that went live with no form dialog open has none, and its button opens the live
  // dialog.
  await openLive(page, `/activity/${id}`);
  await expect(formDialog).toHaveCount(0);
  await expect(card.getByTestId('action-button')).not.toHaveAttribute('command', /.*/);
  await card.getByTestId('action-button').click();
  await expect(page.getByTestId('confirm-dialog')).toBeVisible();
  await page.getByTestId('dialog-cancel').click();
  await card.getByTestId('reject-button').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  expect(problems, 'no console errors or warnings').toEqual([]);
});
