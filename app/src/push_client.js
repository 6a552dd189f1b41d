// The browser half of "Notify this device when a card waits" (DESIGN §9 "the owner's phone"),
// called from app/src/push.rs. Plain browser APIs: the service worker (/sw.js), the Push API and
// the Notifications permission, which is asked for only when the owner taps the control.
//
// Each function resolves to a state word, never throws:
//   "on"          this browser is subscribed and the server knows it
//   "off"         not subscribed (the control offers to turn it on)
//   "denied"      the owner (or the browser) blocked notifications for this site
//   "dismissed"   the permission prompt was closed without an answer
//   "unsupported" this browser has no service worker, Push API or notifications
//   "server-off:SENTENCE"  the server has push off (IRIS_VAPID_SUBJECT unset): its sentence
//   "failed:SENTENCE"      something else went wrong: what

const KEY = 'iris.push.subscription';

function supported() {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

/** Registers /sw.js (installs the app's worker); resolves to the registration or null. */
export async function registerWorker() {
  if (!('serviceWorker' in navigator)) return null;
  try {
    return await navigator.serviceWorker.register('/sw.js', { scope: '/' });
  } catch (e) {
    return null;
  }
}

/** Where this browser stands, without asking the owner anything. */
export async function pushState() {
  if (!supported()) return 'unsupported';
  try {
    const key = await fetch('/api/push/key', { credentials: 'same-origin' });
    if (key.status === 404) {
      const body = await key.json().catch(() => ({}));
      return 'server-off:' + (body.error || 'Web Push is off on this server.');
    }
  } catch (e) {
    // Offline: say nothing about the server; what the browser knows follows.
  }
  if (Notification.permission === 'denied') return 'denied';
  const registration = await registerWorker();
  if (!registration) return 'unsupported';
  const subscription = await registration.pushManager.getSubscription();
  if (!subscription || !localStorage.getItem(KEY)) return 'off';
  // "On" only if the server still has it: a push service that said the subscription is gone
  // makes the server drop it. The browser still holds it, so it is told again.
  try {
    const listed = await fetch('/api/push/subscriptions', { credentials: 'same-origin' });
    if (!listed.ok) return 'on';
    const { subscriptions = [] } = await listed.json();
    const endpoint = subscription.endpoint;
    if (subscriptions.some((s) => s.id === localStorage.getItem(KEY) || s.endpoint === endpoint)) return 'on';
    const saved = await save(subscription);
    return saved.startsWith('failed:') ? 'off' : saved;
  } catch (e) {
    return 'on';
  }
}

/** Tells the server about `subscription`; "on" or "failed:SENTENCE". */
async function save(subscription) {
  const saved = await fetch('/api/push/subscriptions', {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(subscription.toJSON()),
  });
  const savedBody = await saved.json().catch(() => ({}));
  if (!saved.ok) return 'failed:' + (savedBody.error || `the server answered ${saved.status}`);
  localStorage.setItem(KEY, savedBody.id);
  return 'on';
}

/** `promise`, or a rejection with `sentence` after `ms` milliseconds. */
function within(ms, promise, sentence) {
  return Promise.race([
    promise,
    new Promise((_, reject) => setTimeout(() => reject(new Error(sentence)), ms)),
  ]);
}

/** Asks the browser's permission, subscribes with the server's key, tells the server. */
export async function enablePush() {
  if (!supported()) return 'unsupported';
  try {
    const permission = await Notification.requestPermission();
    if (permission === 'denied') return 'denied';
    if (permission !== 'granted') return 'dismissed';
    const keyResponse = await fetch('/api/push/key', { credentials: 'same-origin' });
    const keyBody = await keyResponse.json().catch(() => ({}));
    if (keyResponse.status === 404) return 'server-off:' + (keyBody.error || 'Web Push is off on this server.');
    if (!keyResponse.ok) return 'failed:' + (keyBody.error || `the server answered ${keyResponse.status}`);
    const registration = await registerWorker();
    if (!registration) return 'unsupported';
    await navigator.serviceWorker.ready;
    let subscription = await registration.pushManager.getSubscription();
    if (!subscription) {
      // The browser asks its own push service (Google's for Chrome, Mozilla's for Firefox),
      // which may be unreachable: do not wait for ever.
      subscription = await within(
        20000,
        registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBody.public_key }),
        "the browser's push service did not answer within 20 seconds (is this device online, and may it reach it?)",
      );
    }
    return await save(subscription);
  } catch (e) {
    if (e && e.name === 'NotAllowedError') {
      return 'failed:this browser window may not receive pushes (a private window cannot)';
    }
    return 'failed:' + (e && e.message ? e.message : String(e));
  }
}

/** Unsubscribes this browser and removes its subscription from the server. */
export async function disablePush() {
  try {
    const id = localStorage.getItem(KEY);
    if (id) {
      await fetch('/api/push/subscriptions/' + encodeURIComponent(id), {
        method: 'DELETE',
        credentials: 'same-origin',
      });
      localStorage.removeItem(KEY);
    }
    const registration = await registerWorker();
    const subscription = registration && (await registration.pushManager.getSubscription());
    if (subscription) await subscription.unsubscribe();
    return 'off';
  } catch (e) {
    return 'failed:' + (e && e.message ? e.message : String(e));
  }
}
