// The browser half of passkeys bound to the call (ADR-0118 decision 4), called from
// app/src/passkeys.rs: the WebAuthn ceremonies (navigator.credentials.create / .get) between the
// server's challenge and its check. The server makes every challenge and verifies every answer;
// nothing here decides anything.
//
// Every function resolves, never throws:
//   passkeyList()            the JSON text of GET /api/passkeys, or "failed:SENTENCE"
//   addPasskey(name)         "ok" or "failed:SENTENCE" (with a proof from an existing passkey
//                            first, when one exists)
//   removePasskey(id)        "ok" or "failed:SENTENCE" (with a proof)
//   approveWithPasskey(id, reason, itemsJson, editsJson)
//                            "ok" or "failed:SENTENCE": the card's challenge, the passkey's
//                            answer, and the approve in one request (for the items
//                            `itemsJson` names, a JSON array of indices, when given; for the
//                            call as `editsJson`, a JSON object of fields, edits it)

function b64urlToBytes(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const padded = b64 + '='.repeat((4 - (b64.length % 4)) % 4);
  const raw = atob(padded);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes.buffer;
}

function bytesToB64url(buffer) {
  const bytes = new Uint8Array(buffer);
  let raw = '';
  for (let i = 0; i < bytes.length; i++) raw += String.fromCharCode(bytes[i]);
  return btoa(raw).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function supported() {
  return window.isSecureContext && 'credentials' in navigator && 'PublicKeyCredential' in window;
}

/** The server's creation options with their binary fields as bytes. */
function creationOptions(options) {
  const o = { ...options.publicKey };
  o.challenge = b64urlToBytes(o.challenge);
  o.user = { ...o.user, id: b64urlToBytes(o.user.id) };
  o.excludeCredentials = (o.excludeCredentials || []).map((c) => ({ ...c, id: b64urlToBytes(c.id) }));
  // The server's extension requests are advice; browsers ignore what they do not know.
  delete o.extensions;
  return o;
}

/** The server's request options with their binary fields as bytes. */
function requestOptions(options) {
  const o = { ...options.publicKey };
  o.challenge = b64urlToBytes(o.challenge);
  o.allowCredentials = (o.allowCredentials || []).map((c) => ({ ...c, id: b64urlToBytes(c.id) }));
  delete o.extensions;
  return o;
}

function registrationJSON(credential) {
  return {
    id: credential.id,
    rawId: bytesToB64url(credential.rawId),
    type: credential.type,
    response: {
      attestationObject: bytesToB64url(credential.response.attestationObject),
      clientDataJSON: bytesToB64url(credential.response.clientDataJSON),
    },
    extensions: {},
  };
}

function assertionJSON(credential) {
  const r = credential.response;
  return {
    id: credential.id,
    rawId: bytesToB64url(credential.rawId),
    type: credential.type,
    response: {
      authenticatorData: bytesToB64url(r.authenticatorData),
      clientDataJSON: bytesToB64url(r.clientDataJSON),
      signature: bytesToB64url(r.signature),
      userHandle: r.userHandle ? bytesToB64url(r.userHandle) : null,
    },
    extensions: {},
  };
}

/** A POST (or `method`) with JSON to this site: [status, body]. */
async function send(path, body, method = 'POST') {
  const response = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });
  const json = await response.json().catch(() => ({}));
  return [response.status, json];
}

/** What the browser's refusal means for the owner. */
function ceremonyFailed(e) {
  if (e && e.name === 'NotAllowedError') {
    return 'failed:The passkey was not used (cancelled, timed out, or not verified); nothing was changed.';
  }
  if (e && e.name === 'InvalidStateError') {
    return 'failed:This passkey is registered already; nothing was changed.';
  }
  return 'failed:' + ((e && e.message) || 'the passkey could not be used') + '; nothing was changed.';
}

/** A proof from an existing passkey, or null when none is registered. Throws the browser's error. */
async function proof() {
  const listed = await fetch('/api/passkeys', { credentials: 'same-origin' });
  const { passkeys = [] } = await listed.json().catch(() => ({}));
  if (listed.ok && passkeys.length === 0) return null;
  const [status, challenge] = await send('/api/passkeys/proofs');
  if (status !== 200) throw new Error(challenge.error || `the server answered ${status}`);
  const credential = await navigator.credentials.get({ publicKey: requestOptions(challenge.options) });
  return { ceremony_id: challenge.ceremony_id, credential: assertionJSON(credential) };
}

/** This page at the relying party's host, when the page is elsewhere (127.0.0.1 vs localhost). */
function elsewhere(rpId) {
  if (!rpId) return null;
  const host = location.hostname;
  if (host === rpId || host.endsWith('.' + rpId)) return null;
  return `${location.protocol}//${rpId}${location.port ? ':' + location.port : ''}${location.pathname}`;
}

/** The sentence for a ceremony that cannot work at this address. */
function openThere(url) {
  return `failed:Passkeys work at this server's own address, not this one: open ${url} and try there; nothing was changed.`;
}

export async function passkeyList() {
  try {
    const response = await fetch('/api/passkeys', { credentials: 'same-origin' });
    const text = await response.text();
    if (!response.ok) return 'failed:' + (JSON.parse(text).error || `the server answered ${response.status}`);
    const listing = JSON.parse(text);
    listing.elsewhere = listing.enabled ? elsewhere(listing.relying_party) : null;
    return JSON.stringify(listing);
  } catch (e) {
    return 'failed:the server could not be reached';
  }
}

export async function addPasskey(name) {
  if (!supported()) return 'failed:This browser cannot use passkeys here (it needs https or localhost).';
  try {
    const [status, challenge] = await send('/api/passkeys/registrations', { name });
    if (status !== 200) return 'failed:' + (challenge.error || `the server answered ${status}`);
    const there = elsewhere(challenge.options.publicKey.rp && challenge.options.publicKey.rp.id);
    if (there) return openThere(there);
    const existing = await proof();
    const created = await navigator.credentials.create({ publicKey: creationOptions(challenge.options) });
    const body = { ceremony_id: challenge.ceremony_id, credential: registrationJSON(created) };
    if (existing) body.proof = existing;
    const [saved, answer] = await send('/api/passkeys', body);
    return saved === 201 ? 'ok' : 'failed:' + (answer.error || `the server answered ${saved}`);
  } catch (e) {
    return ceremonyFailed(e);
  }
}

export async function removePasskey(id) {
  if (!supported()) return 'failed:This browser cannot use passkeys here (it needs https or localhost).';
  try {
    const existing = await proof();
    const [status, answer] = await send(`/api/passkeys/${encodeURIComponent(id)}`, { proof: existing }, 'DELETE');
    return status === 204 ? 'ok' : 'failed:' + (answer.error || `the server answered ${status}`);
  } catch (e) {
    return ceremonyFailed(e);
  }
}

export async function approveWithPasskey(id, reason, itemsJson, editsJson) {
  if (!supported()) return 'failed:This browser cannot use passkeys here (it needs https or localhost); approve on a device that can, or reject.';
  try {
    const path = `/governance/approvals/${encodeURIComponent(id)}`;
    // Some of the items only: the challenge is bound to that narrowed call, and the approve
    // names the same items.
    const items = itemsJson ? JSON.parse(itemsJson) : null;
    // An edited call: the challenge is bound to the edited call, and the approve sends the
    // same edits.
    const edits = editsJson ? JSON.parse(editsJson) : null;
    const shaping = {};
    if (items) shaping.items = items;
    if (edits) shaping.edits = edits;
    const [status, challenge] = await send(`${path}/passkey`, shaping);
    if (status !== 200) return 'failed:' + (challenge.error || `the server answered ${status}`);
    const there = elsewhere(challenge.options.publicKey.rpId);
    if (there) return openThere(there);
    const credential = await navigator.credentials.get({ publicKey: requestOptions(challenge.options) });
    const body = {
      decision: 'approve',
      passkey: { ceremony_id: challenge.ceremony_id, credential: assertionJSON(credential) },
    };
    if (reason) body.reason = reason;
    if (items) body.items = items;
    if (edits) body.edits = edits;
    const [answered, answer] = await send(`${path}/respond`, body);
    return answered === 200 ? 'ok' : 'failed:' + (answer.error || `the server answered ${answered}`);
  } catch (e) {
    return ceremonyFailed(e);
  }
}
