# shellcheck shell=bash
# The browser's release wasm, as production serves it, and its size budget: each bundle
# (app::page::Bundle) built with the `wasm-release` profile and `--cfg erase_components`, bound
# by wasm-bindgen and shrunk by binaryen's `wasm-opt`, is at most 250 KB gzip (1 KB = 1,000
# bytes). A phone on a slow network downloads it before a card can be answered (BENCHMARKS.md
# "Wasm size" says where the bytes go and what kept them down). Sourced by
# scripts/build-release.sh (which ships what it builds) and scripts/test.sh (which checks the
# budget on every change, behind the tests: the "release wasm budget" step).
#
# Needs wasm-bindgen (the version Cargo.lock pins), wasm-opt (Debian's binaryen) and python3.

# The budget: bytes of `gzip -9 -n` of each bundle's wasm.
wasm_gzip_budget=250000

# `erase_components` makes each component's view type-erased: far fewer monomorphised copies
# of Leptos' rendering code in the wasm (BENCHMARKS.md gives the sizes). A server that serves
# this wasm must be built with it too: it changes the markers the server writes into the page,
# which hydration reads (a browser build with it hydrating a page from a server without it
# panics).
wasm_release_flags="--cfg erase_components"

# wasm_release_compile NAME FEATURE WORK: compiles one bundle (feature bundle-activity or
# bundle-setup) into $CARGO_TARGET_DIR (or target/) and copies its wasm to WORK/NAME.rustc.wasm
# (the next bundle's compile overwrites cargo's app.wasm). Needs only cargo. Progress goes to
# stderr.
wasm_release_compile() {
  local name=$1 feature=$2 work=$3 target=${CARGO_TARGET_DIR:-$IRIS_ROOT/target}
  mkdir -p "$work"
  echo "[wasm-release] $name: cargo build -p app --lib --target wasm32-unknown-unknown --profile wasm-release --no-default-features --features hydrate,$feature (rustflags: $wasm_release_flags)" >&2
  env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS \
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="$wasm_release_flags" \
    cargo build -p app --lib --target wasm32-unknown-unknown --profile wasm-release \
    --no-default-features --features "hydrate,$feature" >&2 || return 1
  cp "$target/wasm32-unknown-unknown/wasm-release/app.wasm" "$work/$name.rustc.wasm"
}

# wasm_release_finish NAME WORK: binds WORK/NAME.rustc.wasm (wasm_release_compile) into
# WORK/NAME.js and WORK/NAME_bg.wasm and shrinks it into WORK/NAME.opt.wasm. Needs wasm-bindgen
# and wasm-opt.
wasm_release_finish() {
  local name=$1 work=$2
  echo "[wasm-release] $name: wasm-bindgen --target web" >&2
  wasm-bindgen --target web --no-typescript --out-dir "$work" --out-name "$name" \
    "$work/$name.rustc.wasm" >&2
  echo "[wasm-release] $name: wasm-opt -Oz --low-memory-unused --converge" >&2
  # --low-memory-unused lets binaryen fold constant offsets into loads and stores (2.2 KB gzip
  # off Activity's wasm, BENCHMARKS.md). It assumes no address below 1 KB is read or written:
  # Rust's wasm puts its stack first, in the first MB, growing down from 1 MB, so only a stack
  # 1023 KB deep would reach there. --converge runs the passes again while they still shrink it.
  wasm-opt -Oz --low-memory-unused --converge \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$work/${name}_bg.wasm" -o "$work/$name.opt.wasm" >&2
  # Debian's wasm-opt (binaryen 108) points wasm-bindgen's exported externref table at the
  # funcref table; put it back (a no-op when the export came through right).
  python3 "$IRIS_ROOT/scripts/lib/fix_table_exports.py" "$work/${name}_bg.wasm" \
    "$work/$name.opt.wasm" >&2
}

# wasm_release_bundle NAME FEATURE WORK: both of the above, for one bundle: WORK/NAME.js,
# WORK/NAME_bg.wasm and WORK/NAME.opt.wasm.
wasm_release_bundle() {
  wasm_release_compile "$1" "$2" "$3" && wasm_release_finish "$1" "$3"
}

# wasm_within_budget WASM...: prints each file's size (bytes, and gzip -9 -n) and fails when any
# is over $wasm_gzip_budget, naming it and by how much.
wasm_within_budget() {
  local wasm gz over=0
  for wasm in "$@"; do
    gz=$(gzip -9 -n -c "$wasm" | wc -c)
    if [ "$gz" -gt "$wasm_gzip_budget" ]; then
      echo "[wasm-release] OVER BUDGET: $(basename "$wasm") is $gz bytes gzip, over the budget of $wasm_gzip_budget bytes (250 KB) by $((gz - wasm_gzip_budget)) (BENCHMARKS.md \"Wasm size\" says where the bytes go)" >&2
      over=1
    else
      echo "[wasm-release] $(basename "$wasm"): $(stat -c %s "$wasm") bytes, $gz gzip (budget $wasm_gzip_budget, $((wasm_gzip_budget - gz)) to spare)"
    fi
  done
  return "$over"
}

# The record of the last measurement that passed: a digest of what the release wasm is made
# from, then each bundle's bytes and gzip bytes. scripts/test.sh writes it when its "release
# wasm budget" step builds and passes, and skips the build when the record's digest is that of
# the sources it runs on: the same sources and toolchain make the same wasm, and the build's
# dependencies for wasm32 at `wasm-release` cost a machine without the build cache about 100 s
# of its 15 minutes (6 Dec 2026). Commit the record with the change that made it.
wasm_release_record="$IRIS_ROOT/scripts/wasm-release-measured.txt"

# wasm_release_inputs: prints the digest of what the release wasm is made from: every file of
# the app, the core it uses, vendor/, the workspace's manifests, lock and cargo settings and
# these scripts (as they are in the working tree, committed or not), rustc's version and the
# Debian release (whose binaryen is the wasm-opt).
wasm_release_inputs() {
  (
    cd "$IRIS_ROOT" || exit 1
    {
      git ls-files -co --exclude-standard -z -- app crates/core vendor Cargo.toml Cargo.lock \
        .cargo scripts/lib/wasm_release.sh scripts/lib/fix_table_exports.py |
        sort -z | xargs -0 sha256sum
      rustc -V
      cat /etc/debian_version 2>/dev/null || true
    } | sha256sum | cut -c1-64
  )
}

# wasm_release_recorded: succeeds when the record was made from these inputs and every bundle
# in it is within the budget, printing its bundle lines.
wasm_release_recorded() {
  [ -f "$wasm_release_record" ] || return 1
  grep -qx "inputs $(wasm_release_inputs)" "$wasm_release_record" || return 1
  awk -v budget="$wasm_gzip_budget" '$1 ~ /\.wasm$/ { n++; if ($3 > budget) over = 1 }
    END { exit (over || n < 2) }' "$wasm_release_record" || return 1
  grep -E '\.wasm ' "$wasm_release_record"
}

# wasm_release_remember WASM...: writes the record for the current inputs and these files.
wasm_release_remember() {
  local wasm
  {
    echo "# The release wasm as last measured within its budget (scripts/lib/wasm_release.sh):"
    echo "# the digest of its inputs, then each bundle's bytes and gzip -9 bytes."
    echo "inputs $(wasm_release_inputs)"
    for wasm in "$@"; do
      echo "$(basename "$wasm") $(stat -c %s "$wasm") $(gzip -9 -n -c "$wasm" | wc -c)"
    done
  } >"$wasm_release_record"
}
