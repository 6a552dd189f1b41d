// At 320 px (the narrowest phones), light and dark: no page scrolls sideways, the top links all
// show, and the confirm dialog fits with its title, its warning, its undo sentence and both
// buttons in view.
import { test, expect, type Page } from '@playwright/test';
import { askAndOpenCard, shot, watchConsole } from './helpers';

const NARROW = { width: 320, height: 640 };

/** How far the page scrolls sideways, in px (0 when it fits). */
async function sideways(page: Page): Promise<number> {
  return page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
}

/** Every top link is inside the viewport, whole. */
async function expectNavInView(page: Page): Promise<void> {
  for (const name of ['Activity', 'Plugins', 'Devices']) {
    const link = page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name });
    await expect(link).toBeVisible();
    const box = (await link.boundingBox())!;
    expect(box.x, `${name} starts inside`).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width, `${name} ends inside`).toBeLessThanOrEqual(NARROW.width);
  }
}

for (const scheme of ['light', 'dark'] as const) {
  test(`at 320 px (${scheme}) every page fits and the dialog shows whole`, async ({ page }) => {
    const problems = watchConsole(page);
    await page.emulateMedia({ colorScheme: scheme });
    const { id } = await askAndOpenCard(page);
    await page.setViewportSize(NARROW);

    for (const path of ['/activity', `/activity/${id}`, '/plugins', '/devices']) {
      await page.goto(path);
      await expect(page.getByRole('navigation', { name: 'Pages' })).toBeVisible();
      await expectNavInView(page);
      expect(await sideways(page), `${path} scrolls sideways`).toBeLessThanOrEqual(0);
      await shot(page, `narrow-320-${scheme}${path.replace(/\//g, '-').replace(id, 'card')}`);
    }

    await page.goto(`/activity/${id}`);
    // Hydrated first, so the measuring below sees the app's page (before-hydration.spec covers
    // a toggle opened earlier).
    await expect(page.getByTestId('chat-input')).toBeEditable();
    const opened = page.getByTestId(`card-${id}`);
    // The exact call wraps between its values: no id is split over two lines.
    await opened.getByTestId('exact-call-toggle').click();
    const split = await opened.locator('.exact-args').evaluate((pre) => {
      const text = pre.textContent ?? '';
      const ids = [...text.matchAll(/"(m[0-9a-f]+)"/g)].map((m) => m[1]);
      const node = pre.querySelector('code')!.firstChild!;
      return {
        ids: ids.length,
        split: ids.filter((id) => {
          const start = text.indexOf(id);
          const range = document.createRange();
          range.setStart(node, start);
          range.setEnd(node, start + id.length);
          return range.getClientRects().length > 1;
        }),
      };
    });
    expect(split.ids).toBeGreaterThan(0);
    expect(split.split, 'ids split over two lines').toEqual([]);
    await shot(opened.getByTestId('exact-call'), `narrow-320-${scheme}-exact-call`);
    await opened.getByTestId('action-button').click();
    const dialog = page.getByRole('dialog');
    await expect(dialog).toBeVisible();
    const box = (await dialog.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width, 'the dialog fits the screen').toBeLessThanOrEqual(NARROW.width);
    for (const part of [
      dialog.getByRole('heading').first(),
      // What the call does and what can be taken back show without scrolling the list.
      dialog.locator('.dialog-warning').first(),
      dialog.locator('.dialog-undo'),
      dialog.getByTestId('dialog-confirm'),
      dialog.getByTestId('dialog-cancel'),
    ]) {
      await expect(part).toBeInViewport({ ratio: 1 });
    }
    expect(await sideways(page)).toBeLessThanOrEqual(0);
    await shot(page, `narrow-320-${scheme}-dialog`);
    await dialog.getByTestId('dialog-cancel').click();

    // Leave nothing waiting for the specs after this one.
    await opened.getByTestId('reject-button').click();
    await expect(opened.getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
    expect(problems, 'no console errors or warnings').toEqual([]);
  });
}
