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

try:
    with open(record_file) as f:
        before = json.load(f)
except (OSError, ValueError):
    before = {}

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
    json.dump(after, f)
os.replace(tmp, record_file)
print(f"{restored} of {len(after)} files kept the time of the build that used them")
