#!/usr/bin/env python3
"""Tests of commit_mtimes.py, the build cache's file times (scripts/setup.sh).

The rules: a clone at the path the cache last built gets each unchanged file's recorded time
back; a changed file keeps "now"; a clone at another path gets no time back, so cargo rebuilds
the crates that compile their own path in (a server and a wasm that disagree on the server
functions' URLs otherwise). Run by scripts/test.sh ("scripts" step); plain `python3 FILE` works.
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "commit_mtimes.py")
OLD = 1_000_000_000 * 10**9  # 2001-09-09, in nanoseconds: older than any clone


def git(cwd, *args):
    subprocess.run(["git", "-C", cwd, *args], check=True, capture_output=True)


def run(root, record):
    out = subprocess.run(
        [sys.executable, SCRIPT, root, record], check=True, capture_output=True, text=True
    )
    return out.stdout.strip()


class CommitMtimes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.base = self.tmp.name
        self.origin = os.path.join(self.base, "origin")
        os.makedirs(self.origin)
        git(self.origin, "init", "-q")
        for name, text in (("a.rs", "fn a() {}\n"), ("b.rs", "fn b() {}\n")):
            with open(os.path.join(self.origin, name), "w") as f:
                f.write(text)
        git(self.origin, "add", ".")
        git(self.origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
        self.record = os.path.join(self.base, "times.json")

    def tearDown(self):
        self.tmp.cleanup()

    def clone(self, name):
        path = os.path.join(self.base, name)
        git(self.base, "clone", "-q", self.origin, path)
        return path

    def built_at_old_time(self, clone):
        """A build in `clone`: the record is written, then its files carry the build's time."""
        for name in ("a.rs", "b.rs"):
            os.utime(os.path.join(clone, name), ns=(OLD, OLD))
        run(clone, self.record)

    def test_a_fresh_clone_at_the_same_path_gets_the_build_time_back(self):
        first = self.clone("ci")
        self.built_at_old_time(first)
        subprocess.run(["rm", "-rf", first], check=True)
        again = self.clone("ci")
        self.assertIn("2 of 2 files kept", run(again, self.record))
        self.assertEqual(os.stat(os.path.join(again, "a.rs")).st_mtime_ns, OLD)

    def test_a_changed_file_keeps_now(self):
        first = self.clone("ci")
        self.built_at_old_time(first)
        with open(os.path.join(self.origin, "a.rs"), "w") as f:
            f.write("fn a() { changed(); }\n")
        git(self.origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "two")
        subprocess.run(["rm", "-rf", first], check=True)
        again = self.clone("ci")
        self.assertIn("1 of 2 files kept", run(again, self.record))
        self.assertGreater(os.stat(os.path.join(again, "a.rs")).st_mtime_ns, OLD)
        self.assertEqual(os.stat(os.path.join(again, "b.rs")).st_mtime_ns, OLD)

    def test_a_clone_at_another_path_gets_no_time_back(self):
        first = self.clone("ci")
        self.built_at_old_time(first)
        moved = self.clone("elsewhere")
        said = run(moved, self.record)
        self.assertIn("0 of 2 files kept a time", said)
        self.assertIn(os.path.realpath(first), said)
        for name in ("a.rs", "b.rs"):
            self.assertGreater(os.stat(os.path.join(moved, name)).st_mtime_ns, OLD)
        # The record now belongs to the clone that builds next.
        with open(self.record) as f:
            self.assertEqual(json.load(f)["root"], os.path.realpath(moved))

    def test_a_record_without_its_path_is_another_clones(self):
        first = self.clone("ci")
        with open(self.record, "w") as f:
            json.dump({"a.rs": ["0" * 40, OLD]}, f)
        self.assertIn("0 of 2 files kept a time", run(first, self.record))
        self.assertGreater(os.stat(os.path.join(first, "a.rs")).st_mtime_ns, OLD)


if __name__ == "__main__":
    unittest.main()
