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
