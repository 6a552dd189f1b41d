#!/usr/bin/env bash
# The JSON API against its own description: starts `target/debug/iris serve --demo` on a free
# loopback port with a fresh database and demo mailbox in a temp folder, adds a control device,
# and runs schemathesis (scripts/setup.sh installs it) over `/api/openapi.json` with every
# check, a fixed seed and few examples per operation, including the stateful phase that follows
# the document's links (a chat's `approval_id` to the approval's operations, and so on). Exits
# with schemathesis's status: 0 when no request broke a check.
#
#   IRIS_SCHEMATHESIS_EXAMPLES=N   examples per operation and phase (default 10)
#   IRIS_SCHEMATHESIS_SEED=N       the seed (default 20261205)
#   IRIS_SCHEMATHESIS_REPORT=DIR   also keep schemathesis's reports there (JUnit, NDJSON, HAR)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/setup.sh
source "$here/setup.sh"
cd "$IRIS_ROOT"

say() { printf '[schemathesis] %s\n' "$*"; }

st="$IRIS_SCHEMATHESIS_VENV/bin/schemathesis"
if [ ! -x "$st" ]; then
  say "schemathesis is not installed at $st (scripts/setup.sh installs it)"
  exit 2
fi

# The server as the other scripts build it (cheap when the build is warm).
unset LEPTOS_OUTPUT_NAME
# shellcheck source=scripts/lib/server_bin.sh
source "$here/lib/server_bin.sh"
build_server_bin "${IRIS_SERVER_FEATURES[@]}"
iris="${CARGO_TARGET_DIR:-$IRIS_ROOT/target}/debug/iris"

run=$(mktemp -d "${TMPDIR:-/tmp}/iris-schemathesis.XXXXXX")
server_pid=""
stop_server() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    # The server stops within its grace (20 s); then it is killed.
    local i
    for i in $(seq 1 50); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$run"
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# A free loopback port (the kernel's choice); the public URL names it as `localhost` so passkeys
# are on (WebAuthn refuses an IP address) and their operations answer rather than 404.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

# Only this run's settings: no IRIS_* of the caller's shell (a model, a mailbox, a database).
iris_env() {
  local v
  for v in $(compgen -e | grep '^IRIS_' || true); do unset "$v"; done
  export IRIS_CONFIG="$run/iris.toml"
  export IRIS_DATABASE_URL="sqlite://$run/iris.db"
  export IRIS_MAILDIR="$run/Maildir"
  export IRIS_BIND="127.0.0.1:$port"
  export LEPTOS_SITE_ADDR="127.0.0.1:$port"
  export IRIS_PUBLIC_URL="http://localhost:$port"
  # Web Push on, so its operations answer (no subscription the fuzzer makes is valid: a push
  # needs a real P-256 key).
  export IRIS_VAPID_SUBJECT="mailto:owner@example.org"
  # The fuzzer sends made-up session cookies; the session layer's warnings about them are noise.
  export RUST_LOG="${RUST_LOG:-warn,tower_sessions=error}"
  "$@"
}

token=$(cd "$run" && iris_env "$iris" devices add --name schemathesis --scope control | tail -n 1)
if [ -z "$token" ]; then
  say "could not add a control device"
  exit 2
fi

(cd "$run" && iris_env exec "$iris" serve --demo) >"$run/server.log" 2>&1 &
server_pid=$!

# Wait (at most 60 s) for the server to answer.
answers() {
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "$base/api/health" 2>/dev/null
}
deadline=$((SECONDS + 60))
until answers; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    say "the server exited before it answered:"
    cat "$run/server.log" >&2
    exit 2
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    say "the server did not answer on $base within 60 s:"
    cat "$run/server.log" >&2
    exit 2
  fi
  sleep 0.5
done
say "iris serve --demo answers on $base"

report=()
if [ -n "${IRIS_SCHEMATHESIS_REPORT:-}" ]; then
  mkdir -p "$IRIS_SCHEMATHESIS_REPORT"
  report=(--report junit,ndjson,har --report-dir "$(cd "$IRIS_SCHEMATHESIS_REPORT" && pwd)")
fi

# What the command line cannot say. Nothing is kept between runs (no example database, no
# crash cache), so a run depends only on the seed.
cat >"$run/schemathesis.toml" <<'TOML'
[cache]
enabled = false

[generation]
database = "none"

# The control device's token (from the environment, so it is not on a command line).
[headers]
Authorization = "Bearer ${IRIS_SCHEMATHESIS_TOKEN}"

# The event stream never ends: it is read for a second, then cut (what arrived is checked).
[[operations]]
include-path = "/api/events"
request-timeout = 1.0

# The two bodies only a browser can make: a WebAuthn credential (signed by an authenticator)
# and a push subscription (its p256dh a point on P-256). The document states their shape; a
# body of that shape that is not the real thing is refused with 400, so 400 is an expected
# answer to "valid" data here. Data that breaks the shape must still be refused.
[[operations]]
include-operation-id = ["register_passkey", "subscribe_push"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409"]

# The owner's choice of items (docs/adr/0122-shaping-a-call.md): the document states its shape
# (whole numbers, at least one, each once), but whether an index is in range, and whether the
# card can be approved in part at all, depends on the card; such a choice is refused with 400.
[[operations]]
include-operation-id = ["respond", "approval_challenge"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "410"]
TOML

# The one format the document names that schemathesis cannot know: `iris-page-cursor`, the
# `next` of a page of GET /governance/approvals (hex digits encoding `TIME\nID`). Valid ones are
# made from any time and approval id, so "valid" cursors are real positions to page from.
cat >"$run/hooks.py" <<'PY'
import datetime

import schemathesis
from hypothesis import strategies as st

_times = st.datetimes(
    min_value=datetime.datetime(1970, 1, 1),
    max_value=datetime.datetime(9999, 12, 31),
    timezones=st.just(datetime.timezone.utc),
)
_ids = st.from_regex(r"\A[A-Za-z0-9_-]{1,128}\Z")
schemathesis.openapi.format(
    "iris-page-cursor",
    st.builds(lambda t, i: f"{t.isoformat()}\n{i}".encode().hex(), _times, _ids),
)
PY

t0=$SECONDS
rc=0
# timeout(1) bounds the whole run (it takes well under a minute).
(cd "$run" && SCHEMATHESIS_HOOKS="$run/hooks.py" IRIS_SCHEMATHESIS_TOKEN="$token" timeout --kill-after=10 300 "$st" --config-file "$run/schemathesis.toml" --no-color \
  run "$base/api/openapi.json" \
  --checks all \
  --seed "${IRIS_SCHEMATHESIS_SEED:-20261205}" \
  --max-examples "${IRIS_SCHEMATHESIS_EXAMPLES:-10}" \
  --workers 1 \
  --request-timeout 30 \
  "${report[@]}") || rc=$?
say "schemathesis exited $rc after $((SECONDS - t0)) s"
if [ "$rc" -ne 0 ] && [ -s "$run/server.log" ]; then
  say "the server's log (warnings and errors):"
  tail -n 50 "$run/server.log" >&2
fi
exit "$rc"
