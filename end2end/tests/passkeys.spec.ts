// Passkeys bound to the call (ADR-0118 decision 4) in a real Chromium with the DevTools
// protocol's virtual authenticator (ctap2, internal, user verification): register the first
// passkey on Devices, approve a card that needs it (the call runs once), a passkey that does not
// verify the user is refused (nothing runs), and an answer made for one card is refused on
// another. This spec runs against its own server (playwright.config.ts, "passkeys"):
// IRIS_PUBLIC_URL=http://localhost:PORT (WebAuthn refuses an IP address) and
// IRIS_PASSKEY_REQUIRED=destructive.
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { IRIS_BIN, irisCli, PASSKEY_URL, pageShots, REQUEST, watchConsole, openLive } from './helpers';

test.use({ baseURL: PASSKEY_URL });

/** A virtual platform authenticator that verifies the user (Face ID, fingerprint) by default. */
async function authenticator(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return {
    setUserVerified: (isUserVerified: boolean) =>
      cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified }),
    credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials,
  };
}

/** Asks for the promo clean-up in the chat: the new card's id. */
async function ask(page: Page): Promise<string> {
  await page.goto('/activity');
  const input = page.getByTestId('chat-input');
  await expect(input).toBeEditable();
  await input.fill(REQUEST);
  await page.getByTestId('chat-send').click();
  const link = page
    .getByTestId('chat-line')
    .filter({ has: page.getByTestId('chat-approval-link') })
    .last()
    .getByTestId('chat-approval-link');
  await expect(link).toBeVisible();
  return (await link.getAttribute('href'))!.split('/').pop()!;
}

/** Asks again over the API, as this signed-in browser: the new card's id. */
async function askAgain(page: Page): Promise<string> {
  const answer = await page.request.post('/api/chat', {
    data: { message: REQUEST },
    headers: { Origin: PASSKEY_URL },
  });
  expect(answer.status()).toBe(200);
  const body = await answer.json();
  expect(body.status).toBe('awaiting_approval');
  return body.approval_id;
}

async function row(page: Page, id: string) {
  return (await page.request.get(`/governance/approvals/${id}`)).json();
}

test('a card that needs the passkey is approved with it, once, and never without', async ({ page }) => {
  const problems = watchConsole(page);
  await page.goto('/devices');
  const key = await authenticator(page);
  const panel = page.getByTestId('passkey-panel');
  await expect(panel).toContainText('Approving a destructive card needs one of your passkeys.');
  await expect(panel.getByTestId('passkeys-none')).toBeVisible();
  await pageShots(page, 'passkeys-devices-empty');

  // Register the first passkey: no proof needed.
  await panel.getByTestId('passkey-name').fill('This laptop');
  await panel.getByTestId('passkey-add').click();
  await expect(panel.getByTestId('passkey-said')).toHaveText('Passkey “This laptop” added.');
  await expect(panel.getByTestId('passkey-row')).toHaveCount(1);
  await expect(panel.getByTestId('passkey-row')).toContainText('This laptop');
  await expect(panel.getByTestId('passkey-row')).toContainText('last used never');
  await expect(panel.getByTestId('passkey-fingerprint')).toContainText(/Key SHA256:\S{43}/);
  expect(await key.credentials()).toHaveLength(1);
  await pageShots(page, 'passkeys-devices');

  // A card that needs it says so; confirming asks the authenticator, and the call runs once.
  const id = await ask(page);
  await openLive(page, `/activity/${id}`);
  const card = page.getByTestId(`card-${id}`);
  await expect(card.getByTestId('passkey-note')).toContainText('Approving needs your passkey');
  await pageShots(page, 'passkeys-card');
  await card.getByTestId('action-button').click();
  await expect(page.getByRole('dialog').getByTestId('dialog-passkey')).toHaveText(
    'Then your browser asks for your passkey.',
  );
  await page.getByRole('dialog').getByTestId('dialog-confirm').click();
  await expect(card.getByTestId('outcome')).toHaveAttribute('data-status', 'approved');
  await expect(card.getByTestId('outcome')).toContainText('with a passkey');
  await expect
    .poll(async () => (await row(page, id)).execution)
    .toBe('executed');
  // The consent bundle (docs/adr/0124-signed-consent.md): exported at the server, checked with
  // no database, pinned to the fingerprint `iris passkeys list` shows; Chromium's signature
  // covers exactly this approval, and a changed signed field fails with exit 12.
  const db = { IRIS_DATABASE_URL: `sqlite://${path.join(process.env.IRIS_E2E_RUN_DIR!, 'passkeys', 'iris.db')}` };
  const fingerprint = irisCli(['passkeys', 'list'], db).match(/SHA256:\S+/)![0];
  // Devices shows the same fingerprint, so the owner can note it where they keep their key.
  const shown = await (await page.request.get('/api/passkeys')).json();
  expect(shown.passkeys[0].fingerprint).toBe(fingerprint);
  const bundleFile = path.join(process.env.IRIS_E2E_RUN_DIR!, 'passkeys', `bundle-${id}.json`);
  irisCli(['audit', 'export', id, '--out', bundleFile], db);
  const verify = (file: string) =>
    spawnSync(IRIS_BIN, ['audit', 'verify', '--bundle', file, '--credential', fingerprint], { encoding: 'utf8' });
  const verified = verify(bundleFile);
  expect(verified.status, verified.stdout + verified.stderr).toBe(0);
  expect(verified.stdout).toContain('approved by passkey "This laptop"');
  const bundle = JSON.parse(fs.readFileSync(bundleFile, 'utf8'));
  expect(bundle.passkey.fingerprint).toBe(fingerprint);
  bundle.approval.id = `${bundle.approval.id}x`;
  const forgedFile = `${bundleFile}.forged`;
  fs.writeFileSync(forgedFile, JSON.stringify(bundle));
  expect(verify(forgedFile).status).toBe(12);
  const audit = await (await page.request.get(`/api/audit?approval_id=${id}`)).json();
  const decisions = audit.entries.filter((e: { kind: string }) => e.kind === 'decision');
  expect(decisions).toHaveLength(1);
  expect(decisions[0].result.passkey.credential_id).toBeTruthy();
  // Put the mail back (the card's undo needs no passkey), so the next asks find it again.
  const undone = await page.request.post(`/governance/approvals/${id}/undo`, { headers: { Origin: PASSKEY_URL } });
  expect(undone.status()).toBe(200);
  await page.goto('/devices');
  await expect(page.getByTestId('passkey-row')).not.toContainText('last used never');

  // The authenticator no longer verifies the user: refused on the card, nothing runs.
  await key.setUserVerified(false);
  const second = await askAgain(page);
  await openLive(page, `/activity/${second}`);
  const secondCard = page.getByTestId(`card-${second}`);
  await secondCard.getByTestId('action-button').click();
  await page.getByRole('dialog').getByTestId('dialog-confirm').click();
  await expect(secondCard.locator('[role=alert]').first()).toContainText(/passkey|verify/i);
  expect((await row(page, second)).status).toBe('pending');
  expect((await row(page, second)).execution).toBe('none');
  await pageShots(page, 'passkeys-refused');
  await key.setUserVerified(true);

  // An answer made for one card, sent with the approve of another: refused, nothing runs.
  const third = await askAgain(page);
  const replayed = await page.evaluate(
    async ([madeFor, usedOn]) => {
      const bytes = (t: string) =>
        Uint8Array.from(atob(t.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(t.length / 4) * 4, '=')), (c) =>
          c.charCodeAt(0),
        ).buffer;
      const text = (b: ArrayBuffer) =>
        btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
      const post = (path: string, body: object) =>
        fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      const challenge = await (await post(`/governance/approvals/${madeFor}/passkey`, {})).json();
      const o = challenge.options.publicKey;
      const credential = (await navigator.credentials.get({
        publicKey: {
          ...o,
          extensions: undefined,
          challenge: bytes(o.challenge),
          allowCredentials: o.allowCredentials.map((c: { id: string; type: string }) => ({ ...c, id: bytes(c.id) })),
        },
      })) as PublicKeyCredential;
      const r = credential.response as AuthenticatorAssertionResponse;
      const answer = await post(`/governance/approvals/${usedOn}/respond`, {
        decision: 'approve',
        passkey: {
          ceremony_id: challenge.ceremony_id,
          credential: {
            id: credential.id,
            rawId: text(credential.rawId),
            type: 'public-key',
            response: {
              authenticatorData: text(r.authenticatorData),
              clientDataJSON: text(r.clientDataJSON),
              signature: text(r.signature),
              userHandle: r.userHandle ? text(r.userHandle) : null,
            },
            extensions: {},
          },
        },
      });
      return { status: answer.status, body: await answer.json() };
    },
    [third, second],
  );
  expect(replayed.status).toBe(403);
  expect(replayed.body.code).toBe('passkey_required');
  expect(replayed.body.error).toContain('another approval');
  expect((await row(page, second)).status).toBe('pending');

  // Rejecting is one tap, no passkey.
  for (const open of [second, third]) {
    await openLive(page, `/activity/${open}`);
    await page.getByTestId(`card-${open}`).getByTestId('reject-button').click();
    await expect(page.getByTestId(`card-${open}`).getByTestId('outcome')).toHaveAttribute('data-status', 'rejected');
  }
  // Removing the passkey asks it first; then none is left and Devices says so.
  await page.goto('/devices');
  const panel2 = page.getByTestId('passkey-panel');
  await expect(panel2.getByTestId('passkey-row')).toHaveCount(1);
  await panel2.getByTestId('passkey-remove').click();
  await expect(panel2.getByTestId('passkey-said')).toHaveText('Passkey “This laptop” removed.');
  await expect(panel2.getByTestId('passkeys-none')).toBeVisible();
  // On the server's IP address the page says where passkeys work instead.
  await page.goto(`http://127.0.0.1:${new URL(PASSKEY_URL).port}/devices`);
  await expect(page.getByTestId('passkeys-elsewhere')).toContainText(`${PASSKEY_URL}/devices`);
  await expect(page.getByTestId('passkey-add')).toHaveCount(0);
  // The refused requests are logged by the browser as failed loads; nothing else may be.
  expect(problems.filter((p) => !p.includes('status of 403'))).toEqual([]);
});
