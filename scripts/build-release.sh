#!/usr/bin/env bash
# Builds IRIS for production, without cargo-leptos:
#   target/release/iris                  the server (release)
#   target/release/hash.txt              the assets' hashes, read by the server beside its binary
#   target/release/hash-setup.txt        the same for the setup bundle's js and wasm
#   target/site-release/pkg/iris.<hash>.js     wasm-bindgen's loader
#   target/site-release/pkg/iris.<hash>.wasm   the hydrate build of `app` for Activity (feature
#                                              bundle-activity; profile wasm-release, then
#                                              `wasm-opt -Oz`)
#   target/site-release/pkg/iris-setup.<hash>.{js,wasm}   the same for Plugins and Devices
#                                              (feature bundle-setup)
#   target/site-release/pkg/iris.<hash>.css    style/iris.css
#   ….br / ….gz beside each                    compressed once here at the best level
#   target/site-release/*                the contents of app/public/, if any
# The hash in a name is its content's (sha256, 16 hex digits), so the server lets browsers cache
# those files for a year. Installs what is missing (the wasm32 target, the wasm-bindgen CLI the
# lock file pins, Debian's binaryen for wasm-opt and brotli), only when missing. Needs python3
# (scripts/lib/fix_table_exports.py repairs what Debian's wasm-opt gets wrong).
# Run it with `scripts/serve-release.sh` (the same settings as `iris serve`, e.g. `--demo`).
# The debug build (`scripts/build-site.sh`, target/site) and the tests keep unhashed names.
# Exits non-zero, after the build, when a wasm is over its budget of 250 KB gzip (checked last).
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

# The release wasm's build and its budget (scripts/lib/wasm_release.sh, which scripts/test.sh
# checks on every change too). The server is built with the same `--cfg erase_components`: it
# changes the markers the server writes into the page, which hydration reads.
IRIS_ROOT=$root
# shellcheck source=scripts/lib/wasm_release.sh
source "$root/scripts/lib/wasm_release.sh"
flags=$wasm_release_flags

# --- Server ------------------------------------------------------------------------------------
# Leptos reads LEPTOS_OUTPUT_NAME at compile time; the release server runs with hashed names,
# which do not depend on it. Built with it unset, like every other build of this workspace.
unset LEPTOS_OUTPUT_NAME
say "server: cargo build --release -p server --bin iris --features ssr (RUSTFLAGS: $flags)"
RUSTFLAGS="$flags" cargo build --release -p server --bin iris --features ssr

# --- Wasm --------------------------------------------------------------------------------------
# A wasm per set of pages (app::page::Bundle): `iris` hydrates Activity (feature bundle-activity),
# `iris-setup` Plugins and Devices (bundle-setup). The server names each page's own when
# hash-setup.txt is beside it.
site=$target/site-release
pkg=$site/pkg
work=$target/site-release.tmp
rm -rf "$work" "$site"
mkdir -p "$work" "$pkg"
hash_of() { sha256sum "$1" | cut -c1-16; }
# wasm_bundle NAME FEATURE: builds, binds and shrinks one bundle into $pkg/NAME.<hash>.{js,wasm};
# prints the js and wasm hashes (everything else goes to stderr).
wasm_bundle() {
  local name=$1 feature=$2 js_hash wasm_hash
  wasm_release_bundle "$name" "$feature" "$work"
  js_hash=$(hash_of "$work/$name.js")
  wasm_hash=$(hash_of "$work/$name.opt.wasm")
  cp "$work/$name.js" "$pkg/$name.$js_hash.js"
  cp "$work/$name.opt.wasm" "$pkg/$name.$wasm_hash.wasm"
  if [ -d "$work/snippets" ]; then cp -R "$work/snippets" "$pkg/"; fi
  echo "$js_hash $wasm_hash"
}

# --- Hashed names ------------------------------------------------------------------------------
hashes=$(wasm_bundle iris bundle-activity)
read -r js_hash wasm_hash <<<"$hashes"
hashes=$(wasm_bundle iris-setup bundle-setup)
read -r setup_js_hash setup_wasm_hash <<<"$hashes"
css_hash=$(hash_of style/iris.css)
cp style/iris.css "$pkg/iris.$css_hash.css"
if [ -d app/public ]; then cp -R app/public/. "$site/"; fi
rm -rf "$work"
# Leptos (HydrationScripts, HashedStylesheet) reads these files beside the server's binary:
# hash.txt for the Activity bundle and the style sheet, hash-setup.txt for the setup bundle.
printf 'js: %s\nwasm: %s\ncss: %s\n' "$js_hash" "$wasm_hash" "$css_hash" >"$target/release/hash.txt"
printf 'js: %s\nwasm: %s\n' "$setup_js_hash" "$setup_wasm_hash" >"$target/release/hash-setup.txt"

# --- Precompressed copies ----------------------------------------------------------------------
for f in "$pkg"/iris.* "$pkg"/iris-setup.*; do
  gzip -9 -n -k "$f"
  if command -v brotli >/dev/null 2>&1; then brotli -q 11 -k "$f"; fi
done

size() { stat -c %s "$1"; }
for wasm in "$pkg/iris.$wasm_hash.wasm" "$pkg/iris-setup.$setup_wasm_hash.wasm"; do
  say "$(basename "$wasm"): $(size "$wasm") bytes, gzip $(size "$wasm.gz"), brotli $(if [ -f "$wasm.br" ]; then size "$wasm.br"; else echo -; fi)"
done
say "done: $target/release/iris, $target/release/hash.txt, $target/release/hash-setup.txt, $pkg/"
say "run it: scripts/serve-release.sh [--demo]"

# --- Size budget -------------------------------------------------------------------------------
# Over it (scripts/lib/wasm_release.sh), the build is kept but the script fails, naming the file.
if ! wasm_within_budget "$pkg/iris.$wasm_hash.wasm" "$pkg/iris-setup.$setup_wasm_hash.wasm"; then
  say "FAILED: a wasm is over its gzip budget (BENCHMARKS.md says where the bytes go)" >&2
  exit 1
fi
say "size budget: each wasm within $wasm_gzip_budget bytes gzip"
