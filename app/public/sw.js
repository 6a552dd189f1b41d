// IRIS approvals' service worker (DESIGN §9 "the owner's phone"): shows the notification a push
// brings and opens the card on a tap. It never approves anything: approving happens on the card
// (its confirm step, and a passkey when one is required).
//
// Pushes (their JSON, decrypted by the browser):
//   {"type": "approval.requested", "approval_id", "title", "url"}
//     -> a notification tagged with the approval id: the card's title, "Tap to review".
//   {"type": "approval.closed", "approval_id", "title", "url", "outcome", "approved_share"?}
//     -> replaces it (same tag) with the outcome, quietly ("Approved 3 of 5; 2 left out" when
//        the owner approved some of the items). A browser must show something for every push,
//        so a closing push whose card was never shown still shows its outcome.

const OUTCOME = {
  approved: 'Approved',
  rejected: 'Rejected',
  lapsed: 'Lapsed unanswered',
};

// The closing notification's words: the outcome, and for an approval of some items how many
// ("Approved 3 of 5; 2 left out"; counts only, never the items).
function closedBody(push) {
  const share = typeof push.approved_share === 'string' ? push.approved_share.match(/^(\d+) of (\d+)$/) : null;
  if (push.outcome === 'approved' && share) {
    return `Approved ${share[1]} of ${share[2]}; ${Number(share[2]) - Number(share[1])} left out`;
  }
  return OUTCOME[push.outcome] || 'Answered';
}

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let push = null;
  try {
    push = event.data ? event.data.json() : null;
  } catch (e) {
    push = null;
  }
  if (!push || typeof push.approval_id !== 'string' || typeof push.url !== 'string') {
    event.waitUntil(
      self.registration.showNotification('IRIS approvals', { body: 'Something changed: open IRIS to see it.' }),
    );
    return;
  }
  const title = typeof push.title === 'string' && push.title ? push.title : 'A card';
  const options =
    push.type === 'approval.closed'
      ? {
          body: closedBody(push),
          tag: push.approval_id,
          renotify: false,
          silent: true,
          data: { url: push.url },
        }
      : {
          body: 'Tap to review',
          tag: push.approval_id,
          // A first notification alerts anyway; the same card's push again (a server that
          // died mid-send is retried by another) replaces it quietly.
          renotify: false,
          requireInteraction: true,
          data: { url: push.url },
        };
  event.waitUntil(self.registration.showNotification(title, options));
});

// The browser replaced its subscription (it expired, or its push service rotated it): tell the
// server the new one, so the owner's notifications do not stop without a sign. The old one is
// removed by the server when its push service answers 410.
self.addEventListener('pushsubscriptionchange', (event) => {
  event.waitUntil(
    (async () => {
      let subscription = event.newSubscription;
      if (!subscription) {
        const key = await fetch('/api/push/key', { credentials: 'same-origin' });
        if (!key.ok) return;
        const { public_key } = await key.json();
        subscription = await self.registration.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey: public_key,
        });
      }
      await fetch('/api/push/subscriptions', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(subscription.toJSON()),
      });
    })(),
  );
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = new URL((event.notification.data && event.notification.data.url) || '/activity', self.location.origin);
  event.waitUntil(openCard(url.href));
});

/** Focuses a window of this app already on the card (or any window of it, sent there), else opens one. */
async function openCard(href) {
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  for (const client of windows) {
    if (client.url === href) return focus(client);
  }
  for (const client of windows) {
    if (new URL(client.url).origin === self.location.origin && 'navigate' in client) {
      const moved = await client.navigate(href).catch(() => null);
      if (moved) return focus(moved);
    }
  }
  return self.clients.openWindow(href);
}

/** Brings a window forward; a browser may refuse (no tap to allow it), and the window stays. */
async function focus(client) {
  try {
    return await client.focus();
  } catch (e) {
    return client;
  }
}
