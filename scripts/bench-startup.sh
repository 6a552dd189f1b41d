#!/usr/bin/env bash
# No plugin delays start-up (docs/liveness.md "start-up"), measured: a first `iris serve` (the
# debug build scripts/test.sh makes, target/debug/iris) on a Maildir of N generated messages
# and an empty SQLite database. Prints how long the server took to print its "listening" line,
# to answer /api/health, and to end its first mail sync (the Plugins status "N messages in the
# local store"), then the same for a second start on the synced database.
#
#   bash scripts/bench-startup.sh 100000
#
# Last line: RESULT messages=N listening_s=… health_s=… first_sync_s=… restart_health_s=…
# Not part of scripts/test.sh (generating and syncing 250,000 messages takes minutes); the
# test startup::the_server_answers_while_a_large_first_sync_runs_and_mail_tools_wait_for_it
# holds the rule there.
set -euo pipefail
n=${1:-100000}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin="$root/target/debug/iris"
[ -x "$bin" ] || { echo "build the server first (scripts/test.sh or cargo build -p server)" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

python3 - "$work/Maildir" "$n" <<'EOF'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for sub in ("cur", "new", "tmp"):
    os.makedirs(os.path.join(root, sub), exist_ok=True)
for i in range(n):
    with open(os.path.join(root, "cur", f"{i}.bench:2,S"), "w") as f:
        f.write(f"From: sender{i % 997}@example.org\r\nTo: owner@example.org\r\n"
                f"Subject: message {i}\r\nDate: Mon, 30 Nov 2026 10:00:00 +0000\r\n"
                f"Message-ID: <b{i}@example.org>\r\n\r\nbody {i}\r\n")
EOF
echo "[bench] wrote $n messages to $work/Maildir"

export IRIS_DATABASE_URL="sqlite://$work/iris.db" IRIS_MAILDIR="$work/Maildir" IRIS_BIND=127.0.0.1:0
export IRIS_MODEL=openai:http://127.0.0.1:9/v1 IRIS_CONFIG="$work/iris.toml" RUST_LOG=warn,iris_email=info
token=$("$bin" devices add --name bench --scope read | tail -1)

# secs_since T0: seconds (3 decimals) since T0, in nanoseconds since the epoch.
secs_since() {
  local ms=$((($(date +%s%N) - $1) / 1000000))
  printf '%d.%03d' $((ms / 1000)) $((ms % 1000))
}

# start LABEL: starts the server, prints LABEL's seconds to "listening", to health, to synced.
start() {
  local t0 url status
  t0=$(date +%s%N)
  "$bin" serve >"$work/out.log" 2>"$work/err.log" &
  pid=$!
  until grep -q "iris listening on" "$work/out.log" 2>/dev/null; do sleep 0.05; done
  listening=$(secs_since "$t0")
  url=$(grep -o 'http://[0-9.:]*' "$work/out.log" | head -1)
  until curl -fs "$url/api/health" >/dev/null; do sleep 0.05; done
  health=$(secs_since "$t0")
  until status=$(curl -fs -H "Authorization: Bearer $token" "$url/api/plugins") &&
    grep -q "messages in the local store" <<<"$status"; do sleep 0.2; done
  synced=$(secs_since "$t0")
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

start
first=("$listening" "$health" "$synced")
echo "[bench] first start: listening ${first[0]} s, health ${first[1]} s, first sync ended ${first[2]} s"
grep -o 'synced [0-9,]* of [0-9,]* new messages' "$work/out.log" "$work/err.log" | tail -3 || true
start
echo "[bench] second start: listening $listening s, health $health s, synced $synced s"
printf 'RESULT messages=%s listening_s=%.2f health_s=%.2f first_sync_s=%.1f restart_health_s=%.2f restart_sync_s=%.1f\n' \
  "$n" "${first[0]}" "${first[1]}" "${first[2]}" "$health" "$synced"
