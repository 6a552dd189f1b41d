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

# Server features: `ssr` when the server crate declares it (used the same way by every script,
# so cargo reuses one set of artefacts).
IRIS_SERVER_FEATURES=()
if [ -f "$IRIS_ROOT/server/Cargo.toml" ] &&
  awk '/^\[features\]/{f=1; next} /^\[/{f=0} f && /^[[:space:]]*ssr[[:space:]]*=/{found=1} END{exit !found}' \
    "$IRIS_ROOT/server/Cargo.toml"; then
  IRIS_SERVER_FEATURES=(--features server/ssr)
fi
export IRIS_SERVER_FEATURES

setup_main() {
  local need wb_version cl_out

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
    setup_say "installing wasm-bindgen-cli $need (found: ${wb_version:-none}; takes about 5 min)"
    cargo install wasm-bindgen-cli --version "$need" --force
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

  # 4. Chromium for the end-to-end tests (Debian's; Playwright's own download cannot work here).
  if [ ! -x /usr/bin/chromium ]; then
    setup_say "installing Debian chromium"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q chromium
  else
    setup_say "chromium: present"
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

  # 6. Dovecot (the IMAP backend's tests start their own on loopback, each from a config the
  #    test writes), the SMTP sink aiosmtpd (send_email's tests read what lettre sent) and the
  #    MCP Python SDK (the gateway's tests' agent).
  if [ ! -x /usr/sbin/dovecot ]; then
    setup_say "installing Debian dovecot-imapd"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends dovecot-imapd
  else
    setup_say "dovecot: present"
  fi
  # The Dovecot the tests start serves its mail as this system user (Dovecot refuses root).
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
}

setup_main
