// A card says what it repeats: asked twice for the same mail, the second card says, before
// anyone approves, that the same call is already waiting on the first card (and, as the specs
// before this one approved it, that it already ran within the hour); both are then rejected
// (nothing changes). Screenshots at 1280, 375 and 320 px, light and dark.
import { test, expect } from '@playwright/test';
import { askAndOpenCard, shot, watchConsole, DESKTOP, PHONE } from './helpers';

const NARROW = { width: 320, height: 640 };

test('a second card for the same mail says the first one waits with the same call', async ({
  page,
}) => {
  const problems = watchConsole(page);
  const first = await askAndOpenCard(page);
  const firstTitle = (await first.card.locator('.card-title').innerText()).trim();
  const second = await askAndOpenCard(page);
  expect(second.id).not.toBe(first.id);

  const notices = second.card.getByTestId('card-overlaps');
  await expect(notices).toBeVisible();
  await expect(notices).toContainText(`The same call is also on the card "${firstTitle}"`);
  await expect(notices).toContainText('waiting since');
  await expect(notices).toContainText('approving both would do it twice');
  // The first card, made before the second, does not name it (it may name the same call run
  // by an earlier spec within the hour: "already ran").
  await expect(page.getByTestId(`card-${first.id}`)).not.toContainText('approving both');

  for (const scheme of ['light', 'dark'] as const) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const [width, size] of [
      ['1280', DESKTOP],
      ['375', PHONE],
      ['320', NARROW],
    ] as const) {
      await page.setViewportSize(size);
      await shot(second.card, `overlap-card-${width}-${scheme}`);
    }
  }
  await page.setViewportSize(DESKTOP);
  await page.emulateMedia({ colorScheme: 'light' });

  // Leave nothing waiting and nothing changed for the specs after this one.
  for (const id of [first.id, second.id]) {
    const card = page.getByTestId(`card-${id}`);
    await card.getByTestId('reject-button').click();
    await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  }
  expect(problems).toEqual([]);
});
