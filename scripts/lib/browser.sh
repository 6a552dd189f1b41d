# shellcheck shell=bash
# The browser half's cargo commands: its clippy (browser_clippy) and the debug wasm the site
# serves (browser_wasm). Sourced by scripts/build-site.sh and scripts/test.sh.
#
# They compile into a target directory of their own, target/browser. Cargo holds a lock on
# target/debug for the whole compile of any build (a wasm build puts its proc macros and build
# scripts there), so in the shared target/ the browser half could not compile while
# scripts/test.sh's "cargo test" and PostgreSQL suites start: each waits for the other's lock.
# With a directory of its own, test.sh compiles it in the background while the tests run (they
# wait on servers and deadlines and leave the CPU mostly idle; the build runs at the lowest
# priority so they keep what they need), and the site build finds it done. The cost is the
# proc macros and build scripts compiled once more, there, on a machine without the cache.
# Under CI's build cache target/ is a link, so target/browser is cached with the rest.

# The browser half's target directory (absolute: cargo resolves a relative one from the
# current directory).
IRIS_BROWSER_TARGET="$IRIS_ROOT/target/browser"
export IRIS_BROWSER_TARGET

# The bundles the site serves (app::page::Bundle): `iris` hydrates Activity, `iris-setup`
# Plugins and Devices. Printed as "NAME FEATURE" lines.
browser_bundles() {
  printf '%s\n' "iris bundle-activity" "iris-setup bundle-setup"
}

# browser_clippy: lints the browser half as cargo-leptos builds it (every page) and as each
# per-page wasm, with -D warnings.
browser_clippy() {
  local features
  for features in hydrate hydrate,bundle-activity hydrate,bundle-setup; do
    echo "[browser] cargo clippy -p app --lib --target wasm32-unknown-unknown --features $features"
    CARGO_TARGET_DIR=$IRIS_BROWSER_TARGET \
      cargo clippy -p app --lib --target wasm32-unknown-unknown --no-default-features \
      --features "$features" -- -D warnings || return 1
  done
}

# browser_wasm FEATURE: compiles the debug wasm of one bundle to
# $IRIS_BROWSER_TARGET/wasm32-unknown-unknown/debug/app.wasm (the next call overwrites it).
# Without test.sh's clippy wrapper: the wasm is the one rustc alone compiles (clippy-driver
# turns MIR optimisation off), and browser_clippy lints this code.
browser_wasm() {
  local feature=$1
  echo "[browser] cargo build -p app --lib --target wasm32-unknown-unknown --features hydrate,$feature"
  env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS CARGO_TARGET_DIR="$IRIS_BROWSER_TARGET" \
    cargo build -p app --lib --target wasm32-unknown-unknown --no-default-features \
    --features "hydrate,$feature"
}

# browser_compile: what scripts/test.sh runs behind its tests: the clippy of the browser half,
# then each bundle's wasm once, so the site build's own browser_wasm calls find them fresh
# (cargo keeps each feature set's artefacts apart and only copies the fresh one to app.wasm).
browser_compile() {
  local name feature
  browser_clippy
  while read -r name feature; do
    : "$name"
    browser_wasm "$feature"
  done < <(browser_bundles)
}
