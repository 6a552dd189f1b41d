// The calendar plugin's card in the web app, on the demo calendar (a vdir folder beside the
// lane's Maildir): "delete the dentist appointment" makes a red card whose line is read from the
// calendar (summary, day, time, zone, calendar); an event edited after the card is left alone
// and the card says it changed since the owner saw it; approving the next card deletes the file,
// and its undo puts the exact bytes back, once.
import { test, expect, type Locator, type Page } from '@playwright/test';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cardShots, openLive, serverDir, watchConsole } from './helpers';

const REQUEST = 'delete the dentist appointment next week';

function dentistFile(): string {
  return path.join(serverDir(), 'demo-calendar', 'personal', 'dentist.ics');
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

async function approve(page: Page, id: string): Promise<void> {
  const card = page.getByTestId(`card-${id}`);
  await card.getByTestId('action-button').click();
  await page.getByRole('dialog').getByTestId('dialog-confirm').click();
}

test('a calendar card: read from the calendar, stale when edited, deleted once, restored exactly', async ({
  page,
}) => {
  const problems = watchConsole(page);
  const original = fs.readFileSync(dentistFile());

  // The card names the event as the calendar holds it, not as the model put it.
  const first = await ask(page);
  await expect(first.card).toContainText('Delete 1 event');
  await expect(first.card).toContainText('Dentist appointment');
  await expect(first.card).toContainText('10:00–11:00 (Europe/Berlin)');
  await expect(first.card).toContainText('Personal');
  await expect(first.card).toContainText('IRIS keeps a copy');
  await cardShots(page, first.id, 'calendar-card-waiting');

  // Edited in the owner's calendar app after the card: approving changes nothing.
  const edited = original.toString('utf8').replace('SUMMARY:Dentist appointment', 'SUMMARY:Dentist appointment (moved)');
  fs.writeFileSync(dentistFile(), edited);
  await approve(page, first.id);
  await expect(first.card.getByTestId('outcome-execution')).toHaveAttribute('data-execution', 'failed');
  await expect(first.card).toContainText('changed since you saw it');
  expect(fs.readFileSync(dentistFile(), 'utf8')).toBe(edited);
  await cardShots(page, first.id, 'calendar-card-stale');

  // Asked again: the card shows the event as it is now; approving deletes exactly it.
  const second = await ask(page);
  await expect(second.card).toContainText('Dentist appointment (moved)');
  await approve(page, second.id);
  await expect(second.card.getByTestId('outcome-execution')).toHaveAttribute(
    'data-execution',
    'executed',
  );
  expect(fs.existsSync(dentistFile())).toBe(false);
  const undo = second.card.getByTestId('undo-button');
  await expect(undo).toHaveText('Restore 1 event');
  await cardShots(page, second.id, 'calendar-card-done');

  // Undo: the same bytes come back, and the button is gone.
  await undo.click();
  await expect(second.card.getByTestId('card-undone')).toHaveAttribute('data-undo', 'done');
  await expect(second.card.getByTestId('undo-button')).toHaveCount(0);
  expect(fs.readFileSync(dentistFile(), 'utf8')).toBe(edited);
  await cardShots(page, second.id, 'calendar-card-undone');

  // Leave the demo calendar as the run found it.
  fs.writeFileSync(dentistFile(), original);
  expect(problems).toEqual([]);
});
