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

# The feature sets the browser half is linted in: as cargo-leptos builds it (every page, plain
# `hydrate`) and as each per-page wasm.
browser_feature_sets() {
  printf '%s\n' hydrate hydrate,bundle-activity hydrate,bundle-setup
}

# browser_clippy: lints the browser half in each feature set with `cargo clippy -D warnings`, a
# check build of its own (every wasm dependency checked once more, besides being compiled).
# Used only where clippy-driver cannot be the workspace's rustc wrapper (browser_compile).
browser_clippy() {
  local features
  while read -r features; do
    echo "[browser] cargo clippy -p app --lib --target wasm32-unknown-unknown --features $features"
    CARGO_TARGET_DIR=$IRIS_BROWSER_TARGET \
      cargo clippy -p app --lib --target wasm32-unknown-unknown --no-default-features \
      --features "$features" -- -D warnings || return 1
  done < <(browser_feature_sets)
}

# browser_build FEATURES: compiles the debug wasm of the app crate with FEATURES into
# $IRIS_BROWSER_TARGET/wasm32-unknown-unknown/debug/app.wasm (the next call overwrites it), with
# the caller's RUSTC_WORKSPACE_WRAPPER: under scripts/test.sh's clippy-driver (and its
# CLIPPY_ARGS, -D warnings) the build lints the app crate as it compiles it, as the server half
# does, so the wasm dependencies are compiled once and never checked apart (a check build shares
# no artefact with a build: 100 s of CPU of 180 on a bare machine, 6 Dec 2026). The wasm differs
# from rustc's alone only in what clippy-driver turns off (MIR optimisations); the release wasm
# (scripts/lib/wasm_release.sh) is always rustc's.
browser_build() {
  local features=$1
  echo "[browser] cargo build -p app --lib --target wasm32-unknown-unknown --features $features${RUSTC_WORKSPACE_WRAPPER:+ (linted by $(basename "$RUSTC_WORKSPACE_WRAPPER"))}"
  CARGO_TARGET_DIR="$IRIS_BROWSER_TARGET" \
    cargo build -p app --lib --target wasm32-unknown-unknown --no-default-features \
    --features "$features"
}

# browser_wasm FEATURE: the debug wasm of one bundle (browser_build of hydrate,FEATURE), which
# the site serves.
browser_wasm() {
  browser_build "hydrate,$1"
}

# browser_compile: what scripts/test.sh runs behind its tests: the lint of the browser half and
# each bundle's wasm, so the site build's own browser_wasm calls (in the same environment) find
# them fresh (cargo keeps each feature set's artefacts apart and only copies the fresh one to
# app.wasm). With clippy-driver as the wrapper, each bundle is built and linted at once: the two
# bundles hold every page (app::page::Bundle), so plain `hydrate` has no code they lack and is
# not compiled a third time; without the wrapper, `cargo clippy` of every feature set first.
browser_compile() {
  local name feature
  case "${RUSTC_WORKSPACE_WRAPPER:-}" in
    *clippy-driver*) ;;
    *) browser_clippy || return 1 ;;
  esac
  while read -r name feature; do
    : "$name"
    browser_wasm "$feature" || return 1
  done < <(browser_bundles)
}
