// Answering moves the highlight to the card answered, and a card answered in another tab while
// this tab's dialog is open says so instead of closing the dialog without a word.
import { test, expect } from '@playwright/test';
import { askAndOpenCard, watchConsole, openLive } from './helpers';

test('answering card B takes the highlight from card A, the one in the URL', async ({ page }) => {
  const problems = watchConsole(page);
  const { id: a } = await askAndOpenCard(page);
  const { id: b } = await askAndOpenCard(page);
  await openLive(page, `/activity/${a}`);
  const cardA = page.getByTestId(`card-${a}`);
  const cardB = page.getByTestId(`card-${b}`);
  await expect(cardA).toHaveClass(/\bfocused\b/);
  await expect(cardB).not.toHaveClass(/\bfocused\b/);

  await cardB.getByTestId('reject-button').click();
  await expect(cardB.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  await expect(cardB).toHaveClass(/\bfocused\b/);
  await expect(cardA).not.toHaveClass(/\bfocused\b/);

  await cardA.getByTestId('reject-button').click();
  await expect(cardA.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  await expect(cardA).toHaveClass(/\bfocused\b/);
  expect(problems).toEqual([]);
});

test('a card answered in another tab while its dialog is open says so', async ({ page }) => {
  const { id } = await askAndOpenCard(page);
  const card = page.getByTestId(`card-${id}`);
  await card.getByTestId('action-button').click();
  await expect(page.getByRole('dialog')).toBeVisible();

  // The same owner, another tab: rejects it there.
  const other = await page.context().newPage();
  await openLive(other, `/activity/${id}`);
  const there = other.getByTestId(`card-${id}`);
  await there.getByTestId('reject-button').click();
  await expect(there.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');

  // This tab: the dialog is gone, and the card says why.
  await expect(page.getByRole('dialog')).toBeHidden();
  await expect(card.getByTestId('card-error')).toContainText(
    'While you were confirming, this card was answered elsewhere',
  );
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  await other.close();
});
