#!/usr/bin/env bash
# The patched copies in vendor/ are what the build uses, and exactly what their patches say.
#
#   scripts/check-vendor.sh              check every crate (prints one PASS line each; exit 1 on
#                                        any failure, naming the crate)
#   scripts/check-vendor.sh --write NAME (re)writes vendor/patches/NAME.patch from vendor/NAME
#                                        and its crates.io release (after updating a copy)
#
# For each `[patch.crates-io]` entry of the workspace's Cargo.toml (vendor/README.md says why
# each exists):
#   1. the patch: vendor/patches/NAME.patch names the release it applies to in its header
#      (`Crate:`, `Version:`, `Sha256:` of the .crate file). The pristine release is taken from
#      cargo's registry (~/.cargo/registry/src or cache, if a build ever downloaded it), else
#      from target/vendor-pristine/NAME-VERSION.crate, else downloaded from crates.io into
#      that file (the only step that needs the network, once per release); a .crate must have
#      the header's sha256. The patch is applied to a copy (`patch -p1`) and the result must
#      equal vendor/NAME (`diff -r`). `cargo fetch` does not download these three: a patched
#      crate resolves to its path, so the first run downloads them (0.23 MB).
#   2. it is used: Cargo.lock resolves NAME to the path copy (a package of that name and the
#      copy's version with no `source`), no registry copy of NAME is in the graph beside it,
#      and Cargo.lock has no `[[patch.unused]]` (what cargo writes when a `cargo update` moves
#      past the patched version, leaving the patch silently unused).
# Every vendor/patches/*.patch must belong to an entry, and every entry must have a patch.
#
# Not compared (files cargo adds when it packages or unpacks a crate, or upstream's repository
# tooling; none has any effect on a build of the crate as a dependency): .cargo-ok,
# .cargo_vcs_info.json, Cargo.lock, Makefile.toml, .cargo/, .github/, .gitignore. The copies
# keep whichever of them they were made with.
# Needs bash, python3 (3.11+, tomllib), tar, sha256sum, diff, patch (or git), and curl only
# for a release not downloaded yet.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
target=${CARGO_TARGET_DIR:-$root/target}
cache=$target/vendor-pristine
cargo_home=${CARGO_HOME:-$HOME/.cargo}
excluded=(.cargo-ok .cargo_vcs_info.json Cargo.lock Makefile.toml .cargo .github .gitignore)

say() { printf '[check-vendor] %s\n' "$*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# header FILE KEY: the value of `KEY: value` in a patch's header (the lines before its diff).
header() {
  awk -v key="$2" '/^diff /{exit} index($0, key ": ") == 1 {print substr($0, length(key) + 3); exit}' "$1"
}

# crate_file NAME VERSION SHA256: a path to the release's .crate with that checksum (cargo's
# cache, ours, or downloaded into ours); fails if none can be had.
crate_file() {
  local name=$1 version=$2 sha=$3 f
  for f in "$cargo_home"/registry/cache/*/"$name-$version.crate" "$cache/$name-$version.crate"; do
    if [ -f "$f" ] && [ "$(sha256sum "$f" | cut -d' ' -f1)" = "$sha" ]; then
      echo "$f"
      return 0
    fi
  done
  mkdir -p "$cache"
  f=$cache/$name-$version.crate
  say "$name: downloading $name $version from crates.io (once; kept in ${f#"$root"/})" >&2
  if ! curl -sSfL --retry 2 -o "$f.part" "https://static.crates.io/crates/$name/$name-$version.crate"; then
    rm -f "$f.part"
    say "$name: cannot download $name $version (offline? put the .crate at $f)" >&2
    return 1
  fi
  if [ "$(sha256sum "$f.part" | cut -d' ' -f1)" != "$sha" ]; then
    rm -f "$f.part"
    say "$name: the downloaded $name $version does not have sha256 $sha" >&2
    return 1
  fi
  mv "$f.part" "$f"
  echo "$f"
}

# pristine NAME VERSION SHA256 DIR: an untouched copy of the release in DIR.
pristine() {
  local name=$1 version=$2 sha=$3 dir=$4 src f
  for src in "$cargo_home"/registry/src/*/"$name-$version"; do
    # .cargo-ok is cargo's mark of a complete unpacking (of a .crate it checked).
    if [ -f "$src/.cargo-ok" ]; then
      cp -R "$src" "$dir"
      return 0
    fi
  done
  f=$(crate_file "$name" "$version" "$sha") || return 1
  mkdir -p "$tmp/unpack"
  tar -xzf "$f" -C "$tmp/unpack"
  mv "$tmp/unpack/$name-$version" "$dir"
}

apply_patch() { # DIR PATCH
  if command -v patch >/dev/null 2>&1; then
    patch -d "$1" -p1 -s -F0 -N --no-backup-if-mismatch -i "$2"
  else
    (cd "$1" && git apply -p1 "$2")
  fi
}

diff_excluding() { # A B
  local x=()
  for e in "${excluded[@]}"; do x+=(-x "$e"); done
  diff -r "${x[@]}" "$1" "$2"
}

# The `[patch.crates-io]` entries and what Cargo.lock made of them: one line per entry,
# `OK<TAB>name<TAB>path<TAB>version` or `FAIL<TAB>name<TAB>why`.
entries() {
  python3 - "$root" <<'PY'
import pathlib, sys, tomllib

root = pathlib.Path(sys.argv[1])
ws = tomllib.loads((root / "Cargo.toml").read_text())
lock = tomllib.loads((root / "Cargo.lock").read_text())
packages = lock.get("package", [])
unused_names = set()
for unused in lock.get("patch", {}).get("unused", []):
    unused_names.add(unused.get("name"))
    print(f"FAIL\t{unused.get('name')}\tCargo.lock lists {unused.get('name')} "
          f"{unused.get('version')} under [[patch.unused]]: the patch is not used "
          "(a `cargo update` moved past its version?)")
for key, spec in ws.get("patch", {}).get("crates-io", {}).items():
    name = spec.get("package", key) if isinstance(spec, dict) else key
    path = spec.get("path") if isinstance(spec, dict) else None
    if not path:
        print(f"FAIL\t{name}\t[patch.crates-io] {key} is not a path to a copy in vendor/")
        continue
    manifest = root / path / "Cargo.toml"
    if not manifest.is_file():
        print(f"FAIL\t{name}\t{path}/Cargo.toml does not exist")
        continue
    package = tomllib.loads(manifest.read_text()).get("package", {})
    version = package.get("version")
    if package.get("name") != name:
        print(f"FAIL\t{name}\t{path} is the crate {package.get('name')!r}, not {name!r}")
        continue
    same = [p for p in packages if p.get("name") == name]
    ours = [p for p in same if "source" not in p and p.get("version") == version]
    others = [f"{p.get('version')} from {p['source']}" for p in same if "source" in p]
    if name in unused_names:
        continue
    if not ours:
        found = ", ".join(f"{p.get('version')} from {p.get('source', 'a path')}" for p in same)
        print(f"FAIL\t{name}\tCargo.lock does not resolve {name} to {path} ({version}); "
              f"it has: {found or 'no such package'}")
    elif others:
        print(f"FAIL\t{name}\tCargo.lock also has {name} {', '.join(others)}: part of the "
              f"graph uses upstream's copy, not {path}")
    else:
        print(f"OK\t{name}\t{path}\t{version}")
PY
}

# --- --write NAME ---------------------------------------------------------------------------
if [ "${1:-}" = --write ]; then
  name=${2:?usage: scripts/check-vendor.sh --write NAME}
  line=$(entries | awk -F'\t' -v n="$name" '$2 == n' | head -1)
  path=$(cut -f3 <<<"$line")
  version=$(cut -f4 <<<"$line")
  if [ "$(cut -f1 <<<"$line")" != OK ]; then
    say "$name: ${line:-not a [patch.crates-io] entry of Cargo.toml}"
    exit 1
  fi
  # The checksum crates.io's index gives the release (what cargo checks a download against).
  lower=$(tr '[:upper:]' '[:lower:]' <<<"$name")
  case ${#lower} in
    1) index=1/$lower ;;
    2) index=2/$lower ;;
    3) index=3/${lower:0:1}/$lower ;;
    *) index=${lower:0:2}/${lower:2:2}/$lower ;;
  esac
  sha=$(curl -sSfL "https://index.crates.io/$index" | python3 -c '
import json, sys
for line in sys.stdin:
    entry = json.loads(line)
    if entry["vers"] == sys.argv[1]:
        print(entry["cksum"])' "$version")
  if [ -z "$sha" ]; then
    say "$name: $version is not in crates.io's index"
    exit 1
  fi
  f=$(crate_file "$name" "$version" "$sha")
  mkdir -p "$tmp/unpack"
  tar -xzf "$f" -C "$tmp/unpack"
  mv "$tmp/unpack/$name-$version" "$tmp/a"
  cp -R "$path" "$tmp/b"
  for e in "${excluded[@]}"; do find "$tmp/a" "$tmp/b" -name "$e" -prune -exec rm -rf {} +; done
  out=vendor/patches/$name.patch
  mkdir -p vendor/patches
  {
    echo "IRIS's changes to $name $version from crates.io, which make $path (vendor/README.md"
    echo "says what and why). Apply with \`patch -p1\` inside the unpacked release; checked by"
    echo "scripts/check-vendor.sh, written by \`scripts/check-vendor.sh --write $name\`."
    echo "Not compared (packaging, upstream's repo tooling): ${excluded[*]}."
    echo
    echo "Crate: $name"
    echo "Version: $version"
    echo "Source: https://static.crates.io/crates/$name/$name-$version.crate"
    echo "Sha256: $sha"
    echo
    (cd "$tmp" && git diff --no-index --no-color --no-ext-diff --src-prefix= --dst-prefix= a b) || true
  } >"$out"
  say "$name: wrote $out ($(grep -c '^diff --git' "$out") files)"
  exit 0
fi

# --- Check ----------------------------------------------------------------------------------
failed=0
fail() {
  say "FAIL $1: $2"
  failed=1
}
if ! entries >"$tmp/entries"; then
  say "FAIL: cannot read the [patch.crates-io] entries of Cargo.toml or Cargo.lock"
  exit 1
fi
declare -A entry_of=()
while IFS=$'\t' read -r status name rest; do
  if [ "$status" != OK ]; then
    fail "$name" "$rest"
    entry_of[$name]=bad
    continue
  fi
  entry_of[$name]=ok
  IFS=$'\t' read -r path version <<<"$rest"
  p=vendor/patches/$name.patch
  if [ ! -f "$p" ]; then
    fail "$name" "no $p (write it with scripts/check-vendor.sh --write $name)"
    continue
  fi
  pv=$(header "$p" Version)
  sha=$(header "$p" Sha256)
  if [ "$(header "$p" Crate)" != "$name" ] || [ -z "$sha" ]; then
    fail "$name" "$p has no Crate: $name / Sha256: header"
    continue
  fi
  if [ "$pv" != "$version" ]; then
    fail "$name" "$p is against $name $pv, but $path is $version (update the copy and the patch together)"
    continue
  fi
  copy=$tmp/$name
  if ! pristine "$name" "$version" "$sha" "$copy"; then
    fail "$name" "no pristine $name $version to check $p against"
    continue
  fi
  if ! apply_patch "$copy" "$root/$p" >"$tmp/$name.log" 2>&1; then
    cat "$tmp/$name.log"
    fail "$name" "$p does not apply to $name $version"
    continue
  fi
  if ! diff_excluding "$copy" "$path" >"$tmp/$name.diff" 2>&1; then
    head -40 "$tmp/$name.diff"
    fail "$name" "$path differs from $name $version + $p (a change not in the patch? rewrite it with --write $name)"
    continue
  fi
  say "PASS $name $version: $path = crates.io release + $p, and Cargo.lock uses it"
done <"$tmp/entries"
for p in vendor/patches/*.patch; do
  [ -e "$p" ] || continue
  name=$(basename "$p" .patch)
  if [ -z "${entry_of[$name]:-}" ]; then
    fail "$name" "$p has no [patch.crates-io] entry in Cargo.toml (remove the patch with its copy)"
  fi
done
if [ "${#entry_of[@]}" -eq 0 ]; then say "no [patch.crates-io] entries"; fi
exit "$failed"
