// A card whose emails went away before it was approved (issue 5, failed / not-done cards in
// the browser): the owner asks for the promo clean-up, the week's promo files then leave the
// Maildir behind IRIS's back (another mail client, a filter), and the owner approves. Nothing
// runs (trash_email's staleness check, issue 3); the card says "Not done" with the plain reason,
// in amber, never green, and the chat does not claim it was done.
//
// The files are put back afterwards, and the test waits until the server's local store holds
// them again, so the next spec finds the same week's promos.
import { test, expect } from '@playwright/test';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  addDevice,
  serverDir,
  askAndOpenCard,
  backgroundOf,
  expectReadable,
  irisCli,
  PHONE,
  DESKTOP,
  shot,
  WEEK_PROMOS,
  watchConsole,
} from './helpers';

/** The demo's one Maildir account (server/src/state.rs) and its folder on disk. */
const ACCOUNT = 'maildir';
/** The Maildir of this test's lane's server (call inside a test). */
const maildir = (): string => path.join(serverDir(), 'Maildir');

/**
 * The email id the server gives a Maildir file (plugins/email/src/id.rs): "m" + the first 12
 * hex digits of SHA-256(account "\n" unique name), the unique name being the file name before
 * its ":2," flags.
 */
function emailId(fileName: string): string {
  const unique = fileName.split(':2,')[0];
  return `m${createHash('sha256').update(`${ACCOUNT}\n${unique}`).digest('hex').slice(0, 12)}`;
}

/** Every message file under the Maildir (INBOX and its `.Folder`s), by email id. */
function messageFiles(): Map<string, string> {
  const found = new Map<string, string>();
  const root = maildir();
  const folders = [root].concat(
    fs
      .readdirSync(root, { withFileTypes: true })
      .filter((e) => e.isDirectory() && e.name.startsWith('.'))
      .map((e) => path.join(root, e.name)),
  );
  for (const folder of folders) {
    for (const sub of ['cur', 'new']) {
      const dir = path.join(folder, sub);
      if (!fs.existsSync(dir)) continue;
      for (const name of fs.readdirSync(dir)) found.set(emailId(name), path.join(dir, name));
    }
  }
  return found;
}

test('a card whose emails went away says Not done, in amber, with the reason', async ({
  page,
  baseURL,
  request,
}, testInfo) => {
  // Putting the mail back may wait for the server's next mail sync (every 60 s).
  test.setTimeout(200_000);
  const problems = watchConsole(page);
  const { token } = addDevice('stale-check', 'control');
  const cli = { IRIS_URL: baseURL!, IRIS_TOKEN: token };
  // What the server's local store holds this week ("show this week's mail", a read).
  const weekCount = (): number => {
    const reply = irisCli(['chat', "show this week's mail"], cli);
    return Number(/I found (\d+) emails/.exec(reply)?.[1] ?? NaN);
  };
  const weekBefore = weekCount();
  expect(weekBefore).toBeGreaterThanOrEqual(WEEK_PROMOS.length);

  const { id, card } = await askAndOpenCard(page);
  const answer = await request.get(`/governance/approvals/${id}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(answer.ok()).toBe(true);
  const items: string[] = (await answer.json()).items;
  expect(items).toHaveLength(WEEK_PROMOS.length);

  const files = messageFiles();
  const pinned = items.map((item) => files.get(item));
  expect(pinned, `files of ${items.join(', ')} under ${maildir()}`).not.toContain(undefined);
  const aside = fs.mkdtempSync(path.join(serverDir(), 'aside-'));
  const moved: Array<[string, string]> = [];
  try {
    for (const file of pinned as string[]) {
      const away = path.join(aside, path.basename(file));
      fs.renameSync(file, away);
      moved.push([file, away]);
    }

    // The owner approves the card as it stands.
    await card.getByTestId('action-button').click();
    await page.getByRole('dialog').getByTestId('dialog-confirm').click();

    const outcome = card.getByTestId('outcome');
    await expect(outcome).toHaveAttribute('data-status', 'approved');
    await expect(outcome).toHaveAttribute('data-outcome', 'warning');
    await expect(card).toHaveAttribute('data-outcome', 'warning');
    await expect(card.getByTestId('card-status')).toHaveText('Not done');
    // Who approved and when first, then what became of the call.
    await expect(outcome.locator('.outcome-head')).toHaveText(
      /^Approved by .+ via web at .+, but nothing was done\.$/,
    );
    await expect(card.getByTestId('outcome-problem')).toHaveText(
      'Everything on the card changed since you saw it, so nothing was run.',
    );
    await expect(outcome).not.toHaveClass(/outcome-tone-success/);
    // The undo sentence is for calls that ran.
    await expect(card.getByTestId('card-undo')).toHaveCount(0);

    // Amber, not green, in both schemes, and readable.
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      const ground = await backgroundOf(outcome);
      const [r, g, b] = ground.match(/\d+/g)!.map(Number);
      expect(r, `${scheme} not-done outcome ${ground} is amber (red over blue)`).toBeGreaterThan(b);
      expect(g, `${scheme} not-done outcome ${ground} is not green`).toBeLessThanOrEqual(r);
      await expectReadable(outcome.locator('p'));
      await expectReadable(card.getByTestId('card-status'));
      await page.setViewportSize(PHONE);
      const png = await card.screenshot();
      await testInfo.attach(`not-done-card-${scheme}-375px`, { body: png, contentType: 'image/png' });
      await shot(card, `not-done-card-${scheme}-375px`);
      await page.setViewportSize(DESKTOP);
    }
    await page.emulateMedia({ colorScheme: null });

    // The chat does not claim the mail was moved.
    const last = page.getByTestId('chat-line').last();
    await expect(last).toHaveAttribute('data-role', 'assistant');
    await expect(last).not.toContainText('Done: I moved');
    await expect(last).toContainText(/nothing|not/i);
  } finally {
    for (const [file, away] of moved) fs.renameSync(away, file);
  }

  // The files are back where they were; once the store has synced them (at once, unless a
  // sync ran while they were away), this week's mail counts as before.
  await expect.poll(weekCount, { timeout: 90_000, intervals: [500, 2_000, 5_000] }).toBe(weekBefore);
  expect(problems, 'no console errors or warnings').toEqual([]);
});
