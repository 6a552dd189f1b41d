#!/usr/bin/env bash
# Builds IRIS for production, without cargo-leptos:
#   target/release/iris                  the server (release)
#   target/release/hash.txt              the assets' hashes, read by the server beside its binary
#   target/site-release/pkg/iris.<hash>.js     wasm-bindgen's loader
#   target/site-release/pkg/iris.<hash>.wasm   the hydrate build of `app` (profile wasm-release,
#                                              then `wasm-opt -Oz`)
#   target/site-release/pkg/iris.<hash>.css    style/iris.css
#   ….br / ….gz beside each                    compressed once here at the best level
#   target/site-release/*                the contents of app/public/, if any
# The hash in a name is its content's (sha256, 16 hex digits), so the server lets browsers cache
# those files for a year. Installs what is missing (the wasm32 target, the wasm-bindgen CLI the
# lock file pins, Debian's binaryen for wasm-opt and brotli), only when missing. Needs python3
# (scripts/lib/fix_table_exports.py repairs what Debian's wasm-opt gets wrong).
# Run it with `scripts/serve-release.sh` (the same settings as `iris serve`, e.g. `--demo`).
# The debug build (`scripts/build-site.sh`, target/site) and the tests keep unhashed names.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
target=${CARGO_TARGET_DIR:-$root/target}

say() { printf '[build-release] %s\n' "$*"; }

# --- Tools, each only when missing -----------------------------------------------------------
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding Rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
need=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/[^0-9.]/, ""); print; exit}' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$need" ]; then
  say "installing wasm-bindgen-cli $need (found: ${have:-none}; takes about 5 min)"
  cargo install wasm-bindgen-cli --version "$need" --force
fi
apt_install() {
  say "installing Debian $*"
  local sudo=()
  if [ "$(id -u)" != 0 ]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  # Another install (e.g. scripts/setup.sh in a second shell) may hold apt's lock: wait for it.
  local try
  for try in 1 2 3 4 5 6 7 8 9 10; do
    if "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@"; then return 0; fi
    if [ "$try" = 1 ]; then "${sudo[@]}" apt-get update -q || true; fi
    say "apt busy or failed (try $try); retrying in 10 s"
    sleep 10
  done
  return 1
}
if ! command -v wasm-opt >/dev/null 2>&1; then apt_install binaryen; fi
if ! command -v brotli >/dev/null 2>&1; then
  apt_install brotli || say "no brotli CLI: the server compresses with brotli on the fly instead"
fi

# `erase_components` makes each component's view type-erased: far fewer monomorphised copies
# of Leptos' rendering code in the wasm (BENCHMARKS.md gives the sizes). The server must be built
# with it too: it changes the markers the server writes into the page, which hydration reads
# (a browser build with it hydrating a page from a server without it panics).
flags="--cfg erase_components"

# --- Server ------------------------------------------------------------------------------------
# Leptos reads LEPTOS_OUTPUT_NAME at compile time; the release server runs with hashed names,
# which do not depend on it. Built with it unset, like every other build of this workspace.
unset LEPTOS_OUTPUT_NAME
say "server: cargo build --release -p server --bin iris --features ssr (RUSTFLAGS: $flags)"
RUSTFLAGS="$flags" cargo build --release -p server --bin iris --features ssr

# --- Wasm --------------------------------------------------------------------------------------
say "wasm: cargo build -p app --lib --target wasm32-unknown-unknown --profile wasm-release --no-default-features --features hydrate (rustflags: $flags)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="$flags" \
  cargo build -p app --lib --target wasm32-unknown-unknown --profile wasm-release \
  --no-default-features --features hydrate

site=$target/site-release
pkg=$site/pkg
work=$target/site-release.tmp
rm -rf "$work"
mkdir -p "$work"
say "wasm-bindgen --target web"
wasm-bindgen --target web --no-typescript --out-dir "$work" --out-name iris \
  "$target/wasm32-unknown-unknown/wasm-release/app.wasm"
say "wasm-opt -Oz"
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  "$work/iris_bg.wasm" -o "$work/iris.opt.wasm"
# Debian's wasm-opt (binaryen 108) points wasm-bindgen's exported externref table at the funcref
# table; put it back (a no-op when the export came through right).
python3 scripts/lib/fix_table_exports.py "$work/iris_bg.wasm" "$work/iris.opt.wasm"

# --- Hashed names ------------------------------------------------------------------------------
hash_of() { sha256sum "$1" | cut -c1-16; }
js_hash=$(hash_of "$work/iris.js")
wasm_hash=$(hash_of "$work/iris.opt.wasm")
css_hash=$(hash_of style/iris.css)
rm -rf "$site"
mkdir -p "$pkg"
cp "$work/iris.js" "$pkg/iris.$js_hash.js"
cp "$work/iris.opt.wasm" "$pkg/iris.$wasm_hash.wasm"
cp style/iris.css "$pkg/iris.$css_hash.css"
if [ -d "$work/snippets" ]; then cp -R "$work/snippets" "$pkg/"; fi
if [ -d app/public ]; then cp -R app/public/. "$site/"; fi
rm -rf "$work"
# Leptos (HydrationScripts, HashedStylesheet) reads this file beside the server's binary.
printf 'js: %s\nwasm: %s\ncss: %s\n' "$js_hash" "$wasm_hash" "$css_hash" >"$target/release/hash.txt"

# --- Precompressed copies ----------------------------------------------------------------------
for f in "$pkg"/iris.*; do
  gzip -9 -n -k "$f"
  if command -v brotli >/dev/null 2>&1; then brotli -q 11 -k "$f"; fi
done

wasm=$pkg/iris.$wasm_hash.wasm
size() { stat -c %s "$1"; }
say "wasm: $(size "$wasm") bytes, gzip $(size "$wasm.gz"), brotli $(if [ -f "$wasm.br" ]; then size "$wasm.br"; else echo -; fi)"
say "done: $target/release/iris, $target/release/hash.txt, $pkg/"
say "run it: scripts/serve-release.sh [--demo]"
