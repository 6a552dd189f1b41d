-- IRIS approvals: consent signed over the exact call, for PostgreSQL
-- (docs/adr/0124-signed-consent.md). Same rules as migrations/sqlite/0034_signed_consent.sql.
--
-- * `passkey_ceremonies.nonce`: for an approve made under the consent rule, the random nonce
--   its challenge was derived from (base64url); with the approval id, the call hash and the
--   decision it rebuilds the challenge the owner's signature covers. NULL for other purposes
--   and for approves made before this rule.
-- * `passkeys.sign_count`: the authenticator's signature counter as last accepted. The commit
--   that uses a passkey moves it forward by compare-and-set (WebAuthn §7.2 step 22), so two
--   overlapping ceremonies never lower it. Backfilled from the stored credential.
ALTER TABLE passkey_ceremonies ADD COLUMN nonce TEXT;
ALTER TABLE passkeys ADD COLUMN sign_count BIGINT NOT NULL DEFAULT 0;
UPDATE passkeys SET sign_count = COALESCE((key::jsonb #>> '{cred,counter}')::bigint, 0);
