#!/usr/bin/env bash
# Builds the whole site without cargo-leptos (debug, for the demo and the tests):
#   target/debug/iris                 the server (package `server`)
#   target/site/pkg/iris.js           wasm-bindgen's loader of the hydrate build of `app` for
#                                     Activity (feature bundle-activity)
#   target/site/pkg/iris_bg.wasm      the wasm itself, also as iris.wasm (see below)
#   target/site/pkg/iris-setup.js     the same for Plugins and Devices (feature bundle-setup),
#   target/site/pkg/iris-setup_bg.wasm   and iris-setup.wasm
#   target/site/pkg/iris.css          style/iris.css
#   target/site/*                     the contents of app/public/, if any
# Run scripts/setup.sh first (serve-demo.sh and test.sh do).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

say() { printf '[build-site] %s\n' "$*"; }

# Same server features as test.sh and clippy (so cargo reuses one set of artefacts).
features=()
if awk '/^\[features\]/{f=1; next} /^\[/{f=0} f && /^[[:space:]]*ssr[[:space:]]*=/{found=1} END{exit !found}' \
  server/Cargo.toml; then
  features=(--features server/ssr)
fi
# shellcheck source=scripts/lib/server_bin.sh
source "$root/scripts/lib/server_bin.sh"
# shellcheck source=scripts/lib/tools.sh
source "$root/scripts/lib/tools.sh"
# shellcheck source=scripts/lib/browser.sh
IRIS_ROOT=$root source "$root/scripts/lib/browser.sh"

# Leptos reads LEPTOS_OUTPUT_NAME at compile time (it then asks for NAME.wasm instead of
# NAME_bg.wasm). Build with it unset, like plain `cargo build`/`cargo test`, so every build of
# this workspace shares the same artefacts; the name is given to the server when it runs.
unset LEPTOS_OUTPUT_NAME

say "server: target/debug/iris ${features[*]}${IRIS_SERVER_BUILD:+ (from the tests build)}"
build_server_bin "${features[@]}"

site=target/site
pkg=$site/pkg
mkdir -p "$pkg"
# A wasm per set of pages (app::page::Bundle): `iris` hydrates Activity, `iris-setup` Plugins
# and Devices. The server names each page's own when iris-setup.js is there. When
# scripts/test.sh compiled them behind its tests (scripts/lib/browser.sh), it waits for that
# and cargo finds them fresh (a failed one is compiled again here, to show its error).
tool_ready browser >/dev/null || true
while read -r name feature; do
  browser_wasm "$feature"
  tool_ready wasm-bindgen
  say "wasm-bindgen --target web --out-dir $pkg --out-name $name"
  wasm-bindgen --target web --out-dir "$pkg" --out-name "$name" \
    "$IRIS_BROWSER_TARGET/wasm32-unknown-unknown/debug/app.wasm"
  # A server compiled while LEPTOS_OUTPUT_NAME was set (e.g. by cargo-leptos) asks for
  # NAME.wasm; one compiled without it asks for NAME_bg.wasm. Serve both names.
  ln -f "$pkg/${name}_bg.wasm" "$pkg/$name.wasm"
done < <(browser_bundles)

cp style/iris.css "$pkg/iris.css"
if [ -d app/public ]; then
  cp -R app/public/. "$site/"
fi
say "done: target/debug/iris, $pkg/{iris,iris-setup}{.js,_bg.wasm,.wasm}, $pkg/iris.css"
