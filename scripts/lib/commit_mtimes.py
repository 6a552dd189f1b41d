#!/usr/bin/env python3
"""Gives a fresh clone's files the modification times they had when the build cache last built them.

Cargo decides whether a crate must be rebuilt by comparing its files' modification times with
the last build's. A fresh clone (CI) stamps every file "now", so the build cache
(scripts/setup.sh) would rebuild every crate of the workspace. This keeps, in the cache, each
tracked file's git blob id and the time it had when the last run started; a file whose content
(blob id) is the same gets that time back, so its crate is not rebuilt. Any other file keeps
"now": a change never looks older than the build. The record is written before the build, so it
always describes the inputs of the newest artefacts. Files with uncommitted changes are left
alone and not recorded.

Only a clone at the same path as the one the cache last built gets times back. Cargo does not
rebuild a crate whose folder moved, and a crate compiles its own path in: `env!("CARGO_MANIFEST_DIR")`
in the tests (the MCP server under end2end/node_modules), and Leptos's server-function URLs,
which hash it (server_fn_macro: xxh64 of CARGO_MANIFEST_DIR and the module path). A clone
elsewhere would run binaries that point into the other clone, or a server and a wasm that
disagree on every server function's URL. Such a clone keeps "now" for every file, so every
crate of the workspace is rebuilt there (the compiled dependencies in the cache still serve).

Usage: commit_mtimes.py REPO_ROOT RECORD_FILE (scripts/setup.sh runs it whenever a clone builds into the cache)
"""
import json
import os
import subprocess
import sys

root, record_file = sys.argv[1], sys.argv[2]


def git(*args):
    return subprocess.run(
        ["git", "-C", root, *args], check=True, capture_output=True, text=True
    ).stdout


changed = {
    line[3:].split(" -> ")[-1]
    for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
}
blobs = {}
for entry in git("ls-files", "-s", "-z").split("\0"):
    if not entry:
        continue
    meta, path = entry.split("\t", 1)
    if path not in changed:
        blobs[path] = meta.split()[1]

root_real = os.path.realpath(root)
try:
    with open(record_file) as f:
        record = json.load(f)
except (OSError, ValueError):
    record = {}
# A record without its clone's path (the older format) is treated as another clone's.
moved = record.get("root") != root_real
before = {} if moved else record.get("files", {})

restored = 0
after = {}
for path, blob in blobs.items():
    full = os.path.join(root, path)
    if not os.path.isfile(full) or os.path.islink(full):
        continue
    seen = before.get(path)
    if seen and seen[0] == blob:
        os.utime(full, ns=(seen[1], seen[1]))
        restored += 1
    after[path] = [blob, os.stat(full).st_mtime_ns]

tmp = record_file + ".tmp"
with open(tmp, "w") as f:
    json.dump({"root": root_real, "files": after}, f)
os.replace(tmp, record_file)
if moved and record:
    print(
        f"0 of {len(after)} files kept a time: the cache was last built by a clone at "
        f"{record.get('root', 'another path')}, so this clone's crates are rebuilt "
        "(paths compiled into them would name the other clone)"
    )
else:
    print(f"{restored} of {len(after)} files kept the time of the build that used them")
