// The files plugin's card in the web app, on the demo folder (root "downloads", a folder beside
// the lane's Maildir): "clean up the old logs in downloads" makes a red card whose lines are read
// from the disk (path, size, modified time, root); a log edited after the card is left alone and
// its line says it changed since the owner saw it while the others move to the quarantine
// (nothing is deleted); the Plugins page counts the quarantine; the undo moves them back, once.
import { test, expect, type Locator, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cardShots, openLive, serverDir, shot, watchConsole } from './helpers';

const REQUEST = 'clean up the old logs in downloads';

function root(): string {
  return path.join(serverDir(), 'demo-downloads');
}

function log(name: string): string {
  return path.join(root(), 'logs', name);
}

/** Asks in the chat and opens the card this turn made (its id from the chat's own answer). */
async function ask(page: Page): Promise<{ id: string; card: Locator }> {
  await page.goto('/activity');
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill(REQUEST);
  const answered = page.waitForResponse(
    (r) => r.url().includes('/ui/send_chat') && r.request().method() === 'POST',
  );
  await page.getByTestId('chat-send').click();
  const id: string = (await (await answered).json()).approval_id;
  expect(id).toMatch(/^[A-Za-z0-9-]+$/);
  await openLive(page, `/activity/${id}`);
  return { id, card: page.getByTestId(`card-${id}`) };
}

test('a files card: read from the disk, one line stale, the rest quarantined, restored exactly', async ({
  page,
}) => {
  const problems = watchConsole(page);
  const edited = log('installer-error.log');
  const original = fs.readFileSync(edited);
  const originalTimes = fs.statSync(edited);
  const old = ['sync-2026-08.log', 'sync-2026-09.log'];
  const bytes = old.map((name) => fs.readFileSync(log(name)));

  const { id, card } = await ask(page);
  await expect(card).toContainText('Move 3 files to quarantine');
  await expect(card).toContainText('logs/sync-2026-08.log');
  await expect(card).toContainText('logs/installer-error.log');
  await expect(card).toContainText('downloads');
  await expect(card).toContainText('Nothing is deleted');
  await expect(card).not.toContainText('sync-this-week.log');
  await cardShots(page, id, 'files-card-waiting');

  // Edited after the card: that line is left alone, the two others move.
  fs.appendFileSync(edited, 'one more line\n');
  await card.getByTestId('action-button').click();
  await page.getByRole('dialog').getByTestId('dialog-confirm').click();
  await expect(card.getByTestId('outcome-execution')).toHaveAttribute('data-execution', 'executed');
  await expect(card).toContainText('changed since you saw it');
  for (const name of old) expect(fs.existsSync(log(name))).toBe(false);
  expect(fs.existsSync(edited)).toBe(true);
  expect(fs.existsSync(log('sync-this-week.log'))).toBe(true);
  const undo = card.getByTestId('undo-button');
  await expect(undo).toHaveText('Restore 2 files');
  await cardShots(page, id, 'files-card-done');

  // The Plugins page says what the quarantine holds.
  await page.goto('/plugins');
  const status = page.getByTestId('plugin-folders').getByTestId('plugin-status');
  await expect(status).toContainText('downloads (');
  await expect(status).toContainText('2 entries in quarantine');
  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of [1280, 375, 320]) {
      await page.setViewportSize({ width, height: 900 });
      await shot(page.getByTestId('plugin-folders'), `folders-plugin-${width}-${scheme}`);
      const overflow = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      expect(overflow, `sideways scroll at ${width} px`).toBeLessThanOrEqual(0);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 900 });

  // Undo: the same bytes at the same paths, and the button is gone.
  await openLive(page, `/activity/${id}`);
  await card.getByTestId('undo-button').click();
  await expect(card.getByTestId('card-undone')).toHaveAttribute('data-undo', 'done');
  await expect(card.getByTestId('undo-button')).toHaveCount(0);
  old.forEach((name, i) => expect(fs.readFileSync(log(name))).toEqual(bytes[i]));
  await cardShots(page, id, 'files-card-undone');

  // Leave the demo folder as the run found it.
  fs.writeFileSync(edited, original);
  fs.utimesSync(edited, originalTimes.atime, originalTimes.mtime);
  expect(problems).toEqual([]);
});
