#!/usr/bin/env bash
# Builds the whole site without cargo-leptos (debug, for the demo and the tests):
#   target/debug/iris                 the server (package `server`)
#   target/site/pkg/iris.js           wasm-bindgen's loader of the hydrate build of `app`
#   target/site/pkg/iris_bg.wasm      the wasm itself, also as iris.wasm (see below)
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
  features=(--features ssr)
fi

# Leptos reads LEPTOS_OUTPUT_NAME at compile time (it then asks for NAME.wasm instead of
# NAME_bg.wasm). Build with it unset, like plain `cargo build`/`cargo test`, so every build of
# this workspace shares the same artefacts; the name is given to the server when it runs.
unset LEPTOS_OUTPUT_NAME

say "server: cargo build -p server --bin iris ${features[*]}"
cargo build -p server --bin iris "${features[@]}"

say "wasm: cargo build -p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate"
cargo build -p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate

site=target/site
pkg=$site/pkg
mkdir -p "$pkg"
say "wasm-bindgen --target web --out-dir $pkg --out-name iris"
wasm-bindgen --target web --out-dir "$pkg" --out-name iris target/wasm32-unknown-unknown/debug/app.wasm
# A server compiled while LEPTOS_OUTPUT_NAME was set (e.g. by cargo-leptos) asks for iris.wasm;
# one compiled without it asks for iris_bg.wasm. Serve both names.
ln -f "$pkg/iris_bg.wasm" "$pkg/iris.wasm"

cp style/iris.css "$pkg/iris.css"
if [ -d app/public ]; then
  cp -R app/public/. "$site/"
fi
say "done: target/debug/iris, $pkg/{iris.js,iris_bg.wasm,iris.wasm,iris.css}"
