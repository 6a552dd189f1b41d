// Accessible, checked by axe-core (WCAG 2.1 A and AA rules) on every page a person uses, light
// and dark: Activity with a waiting card, a card's own page, the confirm dialog, Devices,
// Plugins and the pairing page.
import { test, expect, type Page } from '@playwright/test';
import AxeBuilder from '@axe-core/playwright';
import { askAndOpenCard, pairingLink, openLive } from './helpers';

/** The violations axe finds on the page as it is now, one line each. */
async function violations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page })
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  return results.violations.map(
    (v) =>
      `${v.id} (${v.impact}): ${v.help} — ${v.nodes
        .slice(0, 3)
        .map((n) => n.target.join(' '))
        .join(', ')}`,
  );
}

for (const scheme of ['light', 'dark'] as const) {
  test(`axe finds nothing on any page (${scheme})`, async ({ page, browser, baseURL }) => {
    await page.emulateMedia({ colorScheme: scheme });
    const { id } = await askAndOpenCard(page);

    await page.goto('/activity');
    await expect(page.getByTestId(`card-${id}`)).toBeVisible();
    expect(await violations(page), 'Activity').toEqual([]);

    await openLive(page, `/activity/${id}`);
    const card = page.getByTestId(`card-${id}`);
    await expect(card).toBeVisible();
    expect(await violations(page), 'a card').toEqual([]);

    await card.getByTestId('action-button').click();
    await expect(page.getByRole('dialog')).toBeVisible();
    expect(await violations(page), 'the dialog').toEqual([]);
    await page.getByTestId('dialog-cancel').click();

    for (const path of ['/devices', '/plugins']) {
      await page.goto(path);
      await expect(page.getByRole('navigation', { name: 'Pages' })).toBeVisible();
      expect(await violations(page), path).toEqual([]);
    }

    const context = await browser.newContext({ baseURL, colorScheme: scheme });
    try {
      const fresh = await context.newPage();
      await fresh.goto(pairingLink('read'));
      await expect(fresh.getByTestId('pair-grant')).toBeVisible();
      expect(await violations(fresh), 'the pairing page').toEqual([]);
    } finally {
      await context.close();
    }

    // Leave nothing waiting for the specs after this one.
    await openLive(page, `/activity/${id}`);
    await page.getByTestId(`card-${id}`).getByTestId('reject-button').click();
    await expect(page.getByTestId(`card-${id}`).getByTestId('outcome')).toHaveAttribute(
      'data-status',
      'rejected',
    );
  });
}
