# shellcheck shell=bash
# build_server_bin FEATURE-ARGS...: builds target/debug/iris, the server the demo, the API fuzz
# and the Playwright tests run. Sourced by scripts/build-site.sh and scripts/schemathesis.sh.
#
# scripts/test.sh sets IRIS_SERVER_BUILD=tests: its "cargo test" step already built the server
# binary, with the features the workspace's dev-dependencies add (iris-core's `testing`,
# sqlx's), and `cargo test --no-run` only links that build to target/debug/iris again. A plain
# `cargo build -p server` would compile the workspace's crates a second time (about a minute
# on 2 cores) for a binary that differs from it only by those test-only features. When a test
# does not compile (or, under test.sh's clippy wrapper, does not pass clippy), the server is
# built on its own without the wrapper, so the browser tests still run.
build_server_bin() {
  if [ "${IRIS_SERVER_BUILD:-}" = tests ] && cargo test --workspace "$@" --no-run; then
    return 0
  fi
  env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS cargo build -p server --bin iris "$@"
}
