#!/usr/bin/env python3
"""Runs the workspace's test binaries side by side (scripts/test.sh, step "cargo test").

`cargo test` runs its test binaries one after another, and most of their time is spent waiting
on servers, models and deadlines, not on the CPU: on 2 cores the server's suite (about 100 s),
the email plugin's and the store's ran end to end. This runs the binaries that
`cargo test --no-run --message-format=json` lists (already built: cargo builds nothing here),
at most LANES at a time, the longest first, each from its package's folder as `cargo test`
would, with the arguments given after `--` (e.g. `--test-threads`). Each binary's output is
printed whole when it ends, under a header naming it, so logs do not interleave. Exits non-zero
when any binary failed, after all have run, with a summary line per binary.

Usage: run_tests.py [--lanes N] [--first NAME ...] CARGO_ARGS... [-- TEST_ARGS...]
  CARGO_ARGS go to `cargo test --no-run` (e.g. --workspace --features server/ssr).
  --first NAME (repeatable) starts these test targets first, in order (a target is
  `PACKAGE/TARGET`, e.g. `server/it`); the rest follow in the order cargo lists them.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time


def parse(argv):
    """The options, the arguments for `cargo test --no-run`, and those after `--` for each
    binary."""
    tests = []
    if "--" in argv:
        at = argv.index("--")
        argv, tests = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser(
        description="Runs the workspace's test binaries side by side.", allow_abbrev=False
    )
    parser.add_argument("--lanes", type=int, default=2, help="binaries at a time")
    parser.add_argument("--first", action="append", default=[], help="PACKAGE/TARGET to start first")
    options, cargo = parser.parse_known_args(argv)
    return max(1, options.lanes), options.first, cargo, tests


def binaries(cargo_args):
    """The test executables cargo built, as (name, executable, package folder)."""
    cmd = ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics", *cargo_args]
    built = subprocess.run(cmd, stdout=subprocess.PIPE)
    if built.returncode != 0:
        sys.exit(f"[run_tests] the build failed (exit {built.returncode}): nothing was run")
    out = built.stdout
    found = []
    for line in out.decode().splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
            continue
        # Only test harnesses: the `iris` binary the integration tests start is built too.
        if not msg.get("profile", {}).get("test"):
            continue
        folder = os.path.dirname(msg["manifest_path"])
        fragment = msg["package_id"].split("#")[-1]
        package = fragment.split("@")[0] if "@" in fragment else os.path.basename(folder)
        kind = msg["target"]["kind"][0]
        suffix = "" if kind == "test" else f" ({kind})"
        found.append((f"{package}/{msg['target']['name']}{suffix}", msg["executable"], folder))
    return found


def main():
    lanes, first, cargo_args, test_args = parse(sys.argv[1:])
    todo = binaries(cargo_args)
    rank = {name: i for i, name in enumerate(first)}
    todo.sort(key=lambda b: rank.get(b[0], len(rank)))
    lock = threading.Lock()
    results = []

    def run_one(name, exe, folder):
        started = time.monotonic()
        env = dict(os.environ, CARGO_MANIFEST_DIR=folder)
        proc = subprocess.run(
            [exe, *test_args], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        took = time.monotonic() - started
        with lock:
            sys.stdout.write(f"\n     Running {name} ({exe}) in {took:.1f}s\n")
            sys.stdout.write(proc.stdout.decode(errors="replace"))
            sys.stdout.flush()
            results.append((name, proc.returncode, took))

    queue = list(todo)

    def lane():
        while True:
            with lock:
                if not queue:
                    return
                job = queue.pop(0)
            run_one(*job)

    threads = [threading.Thread(target=lane) for _ in range(min(lanes, len(todo)) or 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [r for r in results if r[1] != 0]
    print(f"\n[run_tests] {len(results)} test binaries, {lanes} at a time:")
    for name, rc, took in sorted(results, key=lambda r: -r[2]):
        print(f"  {'ok    ' if rc == 0 else 'FAILED'} {name} ({took:.1f}s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
