#!/usr/bin/env bash
# The demo: installs what is missing, builds, and serves IRIS with the demo mailbox and the demo
# model on http://127.0.0.1:3000 (database under ./data/). Stop it with Ctrl-C.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/setup.sh
source "$here/setup.sh"
bash "$here/build-site.sh"

cd "$IRIS_ROOT"
mkdir -p data
export LEPTOS_SITE_ROOT=target/site
export LEPTOS_SITE_PKG_DIR=pkg
export LEPTOS_OUTPUT_NAME=iris
export IRIS_BIND="${IRIS_BIND:-127.0.0.1:3000}"
export LEPTOS_SITE_ADDR="$IRIS_BIND"
# Web Push on, so "Notify this device when a card waits" can be tried (README); a contact of
# your own replaces it.
export IRIS_VAPID_SUBJECT="${IRIS_VAPID_SUBJECT:-mailto:owner@example.org}"
# Passkeys need a name, never an IP address (WebAuthn): on this machine the demo's address is
# http://localhost:PORT (127.0.0.1 still works for everything else).
if [ -z "${IRIS_PUBLIC_URL:-}" ] && [[ "$IRIS_BIND" == 127.0.0.1:* ]]; then
  export IRIS_PUBLIC_URL="http://localhost:${IRIS_BIND##*:}"
fi
printf '[serve-demo] open %s and ask "trash the promo emails from this week", then "undo that"\n' "${IRIS_PUBLIC_URL:-http://$IRIS_BIND}"
exec target/debug/iris serve --demo
