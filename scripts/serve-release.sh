#!/usr/bin/env bash
# Serves the production build of scripts/build-release.sh: target/release/iris with the hashed
# site target/site-release (compressed, hashed files cached for a year). Arguments go to
# `iris serve`, e.g. `scripts/serve-release.sh --demo`; settings come from iris.toml and the
# IRIS_* variables as for any `iris serve` (README). Builds nothing: run build-release.sh first.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
if [ ! -x "$target/release/iris" ] || [ ! -f "$target/release/hash.txt" ]; then
  echo "[serve-release] no release build: run scripts/build-release.sh first" >&2
  exit 1
fi
mkdir -p data
export LEPTOS_OUTPUT_NAME=iris
export LEPTOS_SITE_ROOT="$target/site-release"
export LEPTOS_SITE_PKG_DIR=pkg
# The asset names come from hash.txt beside the binary (Leptos' HydrationScripts and
# HashedStylesheet read it there).
export LEPTOS_HASH_FILES=true
export LEPTOS_ENV=PROD
export IRIS_BIND="${IRIS_BIND:-127.0.0.1:3000}"
export LEPTOS_SITE_ADDR="$IRIS_BIND"
printf '[serve-release] http://%s\n' "$IRIS_BIND"
exec "$target/release/iris" serve "$@"
