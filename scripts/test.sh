#!/usr/bin/env bash
# Every test of IRIS: formatting, clippy (server side and browser side), the workspace's tests
# (unit, integration, corpus), then the site build and the Playwright tests in Chromium.
# Runs every step even after a failure (the browser tests need the site build), prints a
# summary, and exits non-zero if any step failed.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Missing tools that only later steps need (cargo-deny, wasm-bindgen) are built behind clippy and
# the tests (scripts/lib/tools.sh); those steps wait for them.
export IRIS_TOOLS_IN_BACKGROUND=1
# shellcheck source=scripts/setup.sh
source "$here/setup.sh"
cd "$IRIS_ROOT"

# Builds must not see a LEPTOS_OUTPUT_NAME (see build-site.sh); the server gets it at run time.
unset LEPTOS_OUTPUT_NAME

# The shared mail corpora, when they are beside the repo (tests named corpus_* skip without).
if [ -d "$IRIS_ROOT/../shared/corpora" ]; then
  IRIS_CORPORA=$(cd "$IRIS_ROOT/../shared/corpora" && pwd)
  export IRIS_CORPORA
  echo "[test] IRIS_CORPORA=$IRIS_CORPORA"
else
  echo "[test] no ../shared/corpora: the corpus_* tests will skip"
fi

summary=("PASS  setup (${IRIS_SETUP_SECS:-?}s)")
failed=0
started=$(($(date +%s) - ${IRIS_SETUP_SECS:-0}))

# Each step's output is also kept here, so a failed step's reasons can be repeated at the end
# (a CI report often shows only the last lines of the log).
step_logs=$(mktemp -d)
trap 'rm -rf "$step_logs"' EXIT
failed_steps=()

# step NAME COMMAND...: runs one step (in this shell: a step may export what later ones use),
# records PASS/FAIL and its time, and keeps its output.
step() {
  local name=$1 t0 rc log
  shift
  printf '\n===== %s: %s\n' "$name" "$*"
  log="$step_logs/${#summary[@]}.log"
  t0=$(date +%s)
  if "$@" > >(tee "$log") 2>&1; then rc=0; else rc=$?; fi
  if [ "$rc" -eq 0 ]; then
    summary+=("PASS  $name ($(($(date +%s) - t0))s)")
  else
    summary+=("FAIL  $name (exit $rc, $(($(date +%s) - t0))s)")
    failed_steps+=("$name:$log")
    failed=1
  fi
  return "$rc"
}

# The lines of a failed step's output that say why (a panic, an assertion, a test's error),
# each with the line after it (a panic's message), at most 16, without terminal colours.
why_failed() {
  sed 's/\x1b\[[0-9;]*m//g' "$1" |
    grep -E -A1 'panicked at|^test .* FAILED|^error(\[|:)|Error:|Locator:|Expected|Received|✘|[0-9]+\) \[chromium|FAIL |OVER BUDGET' |
    grep -v -E '^(--)?\s*$' | head -n 16
}

skip() {
  printf '\n===== %s: skipped (%s)\n' "$1" "$2"
  summary+=("SKIP  $1 ($2)")
}

step "format" cargo fmt --all -- --check || true
# Every module is named in its crate's map (the crate doc docs/ARCHITECTURE.md relies on).
step "crate maps and docs references" python3 "$here/check-maps.py" || true
# Large units are split at their seams: no Rust file outside vendor/ passes 700 lines.
file_sizes() {
  local over
  over=$(git ls-files -z '*.rs' ':!vendor/' | xargs -0 wc -l | awk '$2 != "total" && $1 > 700')
  if [ -n "$over" ]; then
    printf 'over 700 lines (split it where it has a seam):\n%s\n' "$over"
    return 1
  fi
  echo "every Rust file outside vendor/ is at most 700 lines"
}
step "file sizes" file_sizes || true
# shellcheck source=scripts/lib/browser.sh
source "$here/lib/browser.sh"
# The scripts' own rules (the build cache's file times: scripts/lib/commit_mtimes.py).
step "scripts" python3 "$here/lib/test_commit_mtimes.py" || true
# Clippy lints the workspace's crates while they are compiled for the tests, not in a build of
# its own. `cargo clippy` is `cargo check` with clippy-driver as the workspace's rustc wrapper,
# and a check build shares no artefact with a test build: on a bare machine every dependency was
# compiled twice, once per step (clippy 6 of 18 minutes, 5 Dec 2026). With the wrapper and its
# arguments exported, every cargo command below (the tests, the PostgreSQL suites, the server the
# API fuzz and the site run) lints as it compiles and finds the same artefacts; cargo keys the
# workspace's artefacts by the wrapper, so one command without it would compile them again.
clippy_driver=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)
if [ -n "$clippy_driver" ]; then
  export RUSTC_WORKSPACE_WRAPPER=$clippy_driver
  # cargo-clippy's own encoding of `-- -D warnings`.
  export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
  step "clippy (server side)" \
    cargo test --workspace --all-targets "${IRIS_SERVER_FEATURES[@]}" --no-run || true
else
  step "clippy (server side)" \
    cargo clippy --workspace --all-targets "${IRIS_SERVER_FEATURES[@]}" -- -D warnings || true
fi
# The browser half (its clippy, then the site's wasm: scripts/lib/browser.sh) compiles in a
# target directory of its own behind the tests, at the lowest CPU priority: they mostly wait on
# servers and deadlines. The "clippy (browser side)" step, before the site build, reports it.
browser_behind_tests() {
  renice -n 19 "$BASHPID" >/dev/null
  browser_compile
}
tool_install browser browser_behind_tests
# The release wasm's size budget (scripts/lib/wasm_release.sh): each bundle built as production
# serves it, once the browser half above has compiled (one compile at a time behind the tests),
# at the lowest CPU priority, in a target directory of its own (target/wasm-release: the site
# build's debug wasm must not wait for its lock). Started beside the server side's build
# instead, at the same priority, it made a bare run 90 s longer (6 Dec 2026). Not built when
# scripts/wasm-release-measured.txt records a passing measurement of these very sources; a
# build that passes writes that record. The "release wasm budget" step, last, reports either.
# shellcheck source=scripts/lib/wasm_release.sh
source "$here/lib/wasm_release.sh"
release_wasm_behind_tests() {
  renice -n 19 "$BASHPID" >/dev/null
  local work="$IRIS_ROOT/target/wasm-release/site" name feature
  tool_wait browser || true
  tool_wait packages || { echo "[wasm-release] the test packages (wasm-opt) did not install"; return 1; }
  tool_wait wasm-bindgen || { echo "[wasm-release] wasm-bindgen did not install"; return 1; }
  rm -rf "$work"
  while read -r name feature; do
    CARGO_TARGET_DIR="$IRIS_ROOT/target/wasm-release" wasm_release_bundle "$name" "$feature" "$work"
  done < <(browser_bundles)
  wasm_within_budget "$work/iris.opt.wasm" "$work/iris-setup.opt.wasm"
  wasm_release_remember "$work/iris.opt.wasm" "$work/iris-setup.opt.wasm"
}
if release_wasm_measured=$(wasm_release_recorded); then
  release_wasm_budget() {
    echo "[wasm-release] not built: scripts/wasm-release-measured.txt records these sources within the budget of $wasm_gzip_budget bytes gzip (bundle, bytes, gzip bytes):"
    sed 's/^/[wasm-release]   /' <<<"$release_wasm_measured"
  }
else
  tool_install wasm-release release_wasm_behind_tests
  release_wasm_budget() {
    local rc=0
    tool_ready wasm-release >/dev/null || rc=1
    grep -F '[wasm-release]' "$IRIS_TOOLS_STATE/wasm-release.log" 2>/dev/null || true
    return "$rc"
  }
fi
browser_side() {
  local rc=0
  tool_ready browser >/dev/null || rc=1
  cat "$IRIS_TOOLS_STATE/browser.log" 2>/dev/null || true
  return "$rc"
}
# Most integration tests wait on servers, models and deadlines, not on the CPU: four at a time
# on 2 cores ends the server's suite in two thirds of the time (121 s → 81 s, 5 Dec 2026), and
# every wait in them has its own deadline. RUST_TEST_THREADS set by the caller wins.
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-4}
# The test packages (Chromium, Dovecot, npm and PyPI packages), installed behind the build on a
# machine that lacked them (scripts/setup.sh, setup_packages): the tests need them from here on.
step "test packages" tool_ready packages || true
# The test binaries run two at a time, the longest first (scripts/lib/run_tests.py): `cargo
# test` runs them one after another, and the server's suite alone is half of that time
# (207 s → 147 s, 6 Dec 2026). Each binary's output is printed whole when it ends.
workspace_tests() {
  python3 "$here/lib/run_tests.py" --lanes 2 \
    --first server/it --first iris-email/it --first iris-store/it \
    --workspace "${IRIS_SERVER_FEATURES[@]}"
}
step "cargo test" workspace_tests || true
# The API fuzz and the site take the server binary this step built (scripts/lib/server_bin.sh).
export IRIS_SERVER_BUILD=tests
# The patched crates in vendor/ are their release plus vendor/patches/NAME.patch and what
# Cargo.lock uses; every dependency's licence, source and bans are as deny.toml allows (offline:
# `cargo deny check advisories` needs the network, README.md). Duplicate versions are counted,
# not listed (`cargo deny check bans` lists them). After the tests: on a machine without
# cargo-deny, it is built behind them.
dependencies() {
  local rc=0
  bash "$here/check-vendor.sh" || rc=1
  tool_ready cargo-deny || return 1
  cargo deny --locked --log-level error check --show-stats bans licenses sources || rc=1
  return "$rc"
}
step "dependencies" dependencies || true
# The kernel suites again, on PostgreSQL (each test gets its own database); the store suite and
# the HTTP suites already run on both engines inside `cargo test`.
# `--workspace` as in "cargo test", so the features unify the same way and nothing is built
# again (`-p server` alone would rebuild the server's crates, ~50 s); the store's and the email
# plugin's `it` binaries have no such modules and run nothing.
kernel_on_postgres() {
  IRIS_KERNEL_ENGINE=postgres cargo test --workspace "${IRIS_SERVER_FEATURES[@]}" --test it -- \
    loop_rules:: lifecycle:: undo::
}
step "kernel suites on PostgreSQL" kernel_on_postgres || true
# The JSON API against its own description (/api/openapi.json): schemathesis, every check, a
# fixed seed, on a demo server of its own (scripts/schemathesis.sh).
step "api fuzz (schemathesis)" bash "$here/schemathesis.sh" || true

step "clippy (browser side)" browser_side || true
if step "site build" bash "$here/build-site.sh"; then
  if [ -f end2end/package.json ]; then
    # end2end/playwright.config.ts starts target/debug/iris serve --demo on its own port.
    e2e() (cd "$IRIS_ROOT/end2end" && npx playwright test)
    step "playwright" e2e || true
  else
    skip "playwright" "no end2end/package.json"
  fi
else
  skip "playwright" "the site build failed"
fi

# Each release wasm within its gzip budget (built behind the steps above, or recorded).
step "release wasm budget" release_wasm_budget || true

printf '\n===== summary (%ss in all)\n' "$(($(date +%s) - started))"
printf '  %s\n' "${summary[@]}"
if [ "$failed" -ne 0 ]; then
  names=()
  for entry in "${failed_steps[@]}"; do
    printf '\n===== why %s failed (its lines that say so)\n' "${entry%%:*}"
    why_failed "${entry#*:}" || true
    names+=("${entry%%:*}")
  done
  echo "RESULT: FAILED ($(IFS=,; echo "${names[*]}"))"
  exit 1
fi
echo "RESULT: all steps passed"
