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

A clone at any path gets times back: no crate of the workspace compiles its own path in. The
tests find the `iris` binary and the repository's files when they run (server/tests/it/support:
`iris_bin`, `server_dir`), never through `env!("CARGO_MANIFEST_DIR")` or
`env!("CARGO_BIN_EXE_iris")`, and Leptos names server functions by a fixed key
(.cargo/config.toml `SERVER_FN_OVERRIDE_KEY`) instead of a hash of the crate's folder, so a server
and a wasm built in clones at different paths agree on every URL. test_commit_mtimes.py checks
both. (Cargo itself does not rebuild a crate whose folder moved.)

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
# A record of the older format (no "files") describes nothing this can use.
before = record.get("files", {}) if isinstance(record.get("files"), dict) else {}

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

# Folders too: a build script may watch one (crates/store/build.rs watches migrations/), and
# cargo then compares the folder's own time. A folder gets its recorded time back only when it
# holds exactly the entries it held then and each of its tracked files kept its time (a file
# added, removed or changed keeps "now"); deepest first, so a parent sees its children's times.
kept_files = {path for path in after if before.get(path, [None])[0] == after[path][0]}
folders = {}
for path in after:
    parent = os.path.dirname(path)
    while parent:
        folders.setdefault(parent, set())
        parent = os.path.dirname(parent)
before_folders = record.get("folders", {}) if isinstance(record.get("folders"), dict) else {}
folders_after = {}
for folder in sorted(folders, key=lambda f: -f.count("/")):
    full = os.path.join(root, folder)
    try:
        names = sorted(os.listdir(full))
    except OSError:
        continue
    seen = before_folders.get(folder)
    unchanged = all(
        os.path.join(folder, n) in kept_files
        or os.path.join(folder, n) in folders_after and folders_after[os.path.join(folder, n)][2]
        for n in names
    )
    kept = bool(seen) and seen[0] == names and unchanged
    if kept:
        os.utime(full, ns=(seen[1], seen[1]), follow_symlinks=False)
    folders_after[folder] = [names, os.stat(full).st_mtime_ns, kept]

tmp = record_file + ".tmp"
with open(tmp, "w") as f:
    json.dump(
        {
            "root": root_real,
            "files": after,
            "folders": {k: v[:2] for k, v in folders_after.items()},
        },
        f,
    )
os.replace(tmp, record_file)
print(f"{restored} of {len(after)} files kept the time of the build that used them")
