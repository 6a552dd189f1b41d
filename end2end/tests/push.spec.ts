// The owner's phone (DESIGN §9): the app installs (manifest, service worker), a card that waits
// reaches the service worker as a push and shows a notification, and its answer replaces it.
//
// Chromium's own `pushManager.subscribe()` needs Google's push service, unreachable here, so
// the spec plays the browser's push service itself: it makes a subscription with keys of its
// own (P-256, RFC 8291), posts it to the server as the signed-in browser, receives the server's
// encrypted push on a loopback endpoint, decrypts it as the browser would, and hands it to the
// service worker through CDP (`ServiceWorker.deliverPushMessage`).
import { expect, test, type Page } from '@playwright/test';
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MCP_URL, REQUEST, openLive, watchConsole } from './helpers';

/** A browser's push keys and a loopback endpoint that keeps what the server pushes to it. */
async function pushEndpoint() {
  const ecdh = crypto.createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = crypto.randomBytes(16);
  const bodies: Buffer[] = [];
  const waiting: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      res.writeHead(201).end();
      waiting.splice(0).forEach((wake) => wake());
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    subscription: {
      endpoint: `http://127.0.0.1:${port}/push/e2e`,
      expirationTime: null,
      keys: {
        p256dh: ecdh.getPublicKey().toString('base64url'),
        auth: auth.toString('base64url'),
      },
    },
    /** The next push's decrypted JSON (RFC 8291, one aes128gcm record). */
    async next(): Promise<Record<string, string>> {
      while (bodies.length === 0) await new Promise<void>((r) => waiting.push(r));
      const body = bodies.shift()!;
      const salt = body.subarray(0, 16);
      const idlen = body[20];
      const asPublic = body.subarray(21, 21 + idlen);
      const ciphertext = body.subarray(21 + idlen);
      const shared = ecdh.computeSecret(asPublic);
      const hmac = (key: Buffer, data: Buffer) => crypto.createHmac('sha256', key).update(data).digest();
      const prkKey = hmac(auth, shared);
      const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), ecdh.getPublicKey(), asPublic, Buffer.from([1])]);
      const ikm = hmac(prkKey, keyInfo);
      const prk = hmac(salt, ikm);
      const cek = hmac(prk, Buffer.from('Content-Encoding: aes128gcm\0\x01', 'binary')).subarray(0, 16);
      const nonce = hmac(prk, Buffer.from('Content-Encoding: nonce\0\x01', 'binary')).subarray(0, 12);
      const decipher = crypto.createDecipheriv('aes-128-gcm', cek, nonce);
      decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
      const padded = Buffer.concat([decipher.update(ciphertext.subarray(0, ciphertext.length - 16)), decipher.final()]);
      // The last record ends with the delimiter 0x02, then zero padding.
      const end = padded.lastIndexOf(2);
      return JSON.parse(padded.subarray(0, end).toString('utf8'));
    },
    close: () => server.close(),
  };
}

/**
 * A CDP session with the ServiceWorker domain on, and the app worker's registration id (once
 * it is active); `deliver` hands it a push as the browser's push service would.
 */
async function workerSession(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  const ids: string[] = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => {
    for (const r of e.registrations) if (!r.isDeleted && r.scopeURL.endsWith('/')) ids.push(r.registrationId);
  });
  await cdp.send('ServiceWorker.enable');
  await expect.poll(() => ids.length).toBeGreaterThan(0);
  const registrationId = ids[ids.length - 1];
  return {
    deliver: (payload: object) =>
      cdp.send('ServiceWorker.deliverPushMessage', {
        origin: new URL(page.url()).origin,
        registrationId,
        data: JSON.stringify(payload),
      }),
  };
}

/** The notifications the service worker shows now: title, body, tag. */
async function notifications(page: Page) {
  return page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    return (await registration.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag }));
  });
}

test('the app installs: a manifest with icons, theme colours and a service worker', async ({ page, request }) => {
  const problems = watchConsole(page);
  const manifest = await (await request.get('/manifest.webmanifest')).json();
  expect(manifest.name).toBe('IRIS approvals');
  expect(manifest.short_name).toBe('IRIS');
  expect(manifest.display).toBe('standalone');
  expect(manifest.start_url).toBe('/activity');
  expect(manifest.icons.map((i: { purpose: string }) => i.purpose)).toContain('maskable');
  // A new service worker or manifest is seen at once.
  for (const file of ['/sw.js', '/manifest.webmanifest']) {
    expect((await request.get(file)).headers()['cache-control'], file).toBe('no-cache');
  }
  for (const icon of manifest.icons) {
    const response = await request.get(icon.src);
    expect(response.status(), icon.src).toBe(200);
    expect(response.headers()['content-type']).toBe('image/png');
  }
  await page.goto('/activity');
  await expect(page.locator('link[rel="manifest"]')).toHaveAttribute('href', '/manifest.webmanifest');
  await expect(page.locator('meta[name="theme-color"]')).toHaveCount(2);
  await expect(page.locator('meta[name="theme-color"][media="(prefers-color-scheme: dark)"]')).toHaveCount(1);
  const script = await page.evaluate(async () => (await navigator.serviceWorker.ready).active?.scriptURL);
  expect(script).toMatch(/\/sw\.js$/);
  expect(problems).toEqual([]);
});

test('a waiting card reaches the phone as a notification, and its answer replaces it', async ({ page, context }) => {
  await context.grantPermissions(['notifications']);
  const endpoint = await pushEndpoint();
  let subscription = '';
  try {
    await page.goto('/activity');
    await expect(page.getByTestId('chat-input')).toBeEditable();
    const worker = await workerSession(page);
    const origin = new URL(page.url()).origin;
    const subscribed = await page.request.post('/api/push/subscriptions', {
      data: endpoint.subscription,
      headers: { Origin: origin },
    });
    expect(subscribed.status()).toBe(201);
    subscription = (await subscribed.json()).id;
    // Devices says which devices get notifications.
    await page.goto('/devices');
    const me = page.getByTestId('device-row').filter({ has: page.locator('.badge-this') });
    await expect(me.getByTestId('device-notified')).toHaveText('Notifications on');
    await page.goto('/activity');
    await expect(page.getByTestId('chat-input')).toBeEditable();

    await page.getByTestId('chat-input').fill(REQUEST);
    await page.getByTestId('chat-send').click();
    const requested = await endpoint.next();
    expect(requested.type).toBe('approval.requested');
    expect(requested.url).toBe(`/activity/${requested.approval_id}`);
    // The card's title only: never the mails' subjects.
    expect(JSON.stringify(requested)).not.toContain('Black Friday');

    await worker.deliver(requested);
    await expect
      .poll(() => notifications(page))
      .toEqual([{ title: requested.title, body: 'Tap to review', tag: requested.approval_id }]);

    // A tap on it opens the card (headless Chromium cannot click a notification: the worker
    // gets the same click event its notification would send).
    const sw = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
    await sw.evaluate(async () => {
      // The worker's own globals (ServiceWorkerGlobalScope, NotificationEvent).
      const scope = self as any; // eslint-disable-line @typescript-eslint/no-explicit-any
      const [shown] = await scope.registration.getNotifications();
      scope.dispatchEvent(new scope.NotificationEvent('notificationclick', { notification: shown }));
    });
    await expect(page).toHaveURL(new RegExp(`/activity/${requested.approval_id}$`));
    await expect(page.getByTestId(`card-${requested.approval_id}`)).toBeVisible();

    const answered = await page.request.post(`/governance/approvals/${requested.approval_id}/respond`, {
      data: { decision: 'reject', reason: 'not now' },
      headers: { Origin: origin },
    });
    expect(answered.status()).toBe(200);
    const closed = await endpoint.next();
    expect(closed).toMatchObject({ type: 'approval.closed', approval_id: requested.approval_id, outcome: 'rejected' });
    await worker.deliver(closed);
    await expect
      .poll(() => notifications(page))
      .toEqual([{ title: requested.title, body: 'Rejected', tag: requested.approval_id }]);
  } finally {
    // The specs share one server: leave no subscription whose push service is gone.
    if (subscription) {
      await page.request.delete(`/api/push/subscriptions/${subscription}`, {
        headers: { Origin: new URL(page.url()).origin },
      });
    }
    endpoint.close();
  }
});

test('"Notify this device" asks only when tapped and says what to do when blocked or off', async ({ page, context }) => {
  await context.clearPermissions();
  await page.goto('/activity');
  await expect(page.getByTestId('chat-input')).toBeEditable();
  const control = page.getByTestId('push-control');
  const button = control.getByTestId('push-on');
  await expect(button).toHaveText('Notify this device when a card waits');
  await expect(control.getByTestId('push-note')).toHaveCount(0);
  // Headless Chromium answers the permission prompt by itself: blocked, or closed unanswered.
  await button.click();
  const note = control.getByTestId('push-note');
  await expect(note).toContainText('Notifications');
  if ((await page.evaluate(() => Notification.permission)) === 'denied') {
    await expect(note).toContainText('blocked for this site');
    await expect(note).toContainText('site settings');
  } else {
    await expect(note).toContainText('Tap again and choose Allow');
  }
  await expect(button).toBeVisible();

  // A server with push off: its sentence names the setting that turns it on.
  await page.route('**/api/push/key', (route) =>
    route.fulfill({
      status: 404,
      contentType: 'application/json',
      body: JSON.stringify({ error: 'Web Push is off on this server: set IRIS_VAPID_SUBJECT to a mailto: address or an https: URL (RFC 8292) and restart it' }),
    }),
  );
  await page.goto('/devices');
  const onDevices = page.getByTestId('devices-page').getByTestId('push-control');
  // Said as soon as the page knows, before any tap.
  await expect(onDevices.getByTestId('push-note')).toContainText('IRIS_VAPID_SUBJECT');
  await expect(onDevices.getByTestId('push-on')).toHaveCount(0);
});

test('a server with Web Push off says why at once and never asks for the key', async ({ page }) => {
  // The MCP gateway's demo server runs without IRIS_VAPID_SUBJECT (playwright.config.ts).
  const problems = watchConsole(page);
  const keyRequests: string[] = [];
  page.on('request', (request) => {
    if (request.url().includes('/api/push/key')) keyRequests.push(request.url());
  });
  for (const path of ['/activity', '/devices']) {
    await openLive(page, `${MCP_URL}${path}`);
    const control = page.getByTestId('push-control');
    await expect(control.getByTestId('push-note'), path).toContainText('IRIS_VAPID_SUBJECT');
    await expect(control.getByTestId('push-on'), path).toHaveCount(0);
  }
  expect(keyRequests, 'the page knew push is off from its own data').toEqual([]);
  expect(problems, 'no console errors or warnings (no 404 for the key)').toEqual([]);
});
