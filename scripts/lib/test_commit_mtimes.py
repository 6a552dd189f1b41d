#!/usr/bin/env python3
"""Tests of commit_mtimes.py, the build cache's file times (scripts/setup.sh).

The rules: a clone, at any path, gets each unchanged file's recorded time back; a changed file
keeps "now". That is safe only while no crate compiles its own path in, which the last test
checks of the repository itself. Run by scripts/test.sh ("scripts" step); plain `python3 FILE`
works.
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

    def test_a_clone_at_another_path_gets_the_build_time_back_too(self):
        first = self.clone("ci")
        self.built_at_old_time(first)
        moved = self.clone("elsewhere")
        self.assertIn("2 of 2 files kept", run(moved, self.record))
        for name in ("a.rs", "b.rs"):
            self.assertEqual(os.stat(os.path.join(moved, name)).st_mtime_ns, OLD)
        # The record now names the clone that builds next.
        with open(self.record) as f:
            self.assertEqual(json.load(f)["root"], os.path.realpath(moved))

    def test_a_record_of_the_older_format_gives_no_time_back(self):
        first = self.clone("ci")
        with open(self.record, "w") as f:
            json.dump({"a.rs": ["0" * 40, OLD]}, f)
        self.assertIn("0 of 2 files kept", run(first, self.record))
        self.assertGreater(os.stat(os.path.join(first, "a.rs")).st_mtime_ns, OLD)


class FolderTimes(unittest.TestCase):
    """A build script may watch a folder (crates/store/build.rs: migrations/); cargo compares
    the folder's own time, so a folder holding what it held gets its time back too."""

    clone = CommitMtimes.clone
    tearDown = CommitMtimes.tearDown

    def setUp(self):
        CommitMtimes.setUp(self)
        os.makedirs(os.path.join(self.origin, "m"))
        with open(os.path.join(self.origin, "m", "0001.sql"), "w") as f:
            f.write("CREATE TABLE t (x INTEGER);\n")
        git(self.origin, "add", ".")
        git(self.origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m")

    def built(self, clone):
        for name in ("a.rs", "b.rs", "m/0001.sql"):
            os.utime(os.path.join(clone, name), ns=(OLD, OLD))
        os.utime(os.path.join(clone, "m"), ns=(OLD, OLD))
        run(clone, self.record)

    def test_a_folder_with_the_same_files_gets_its_time_back(self):
        self.built(self.clone("first"))
        again = self.clone("second")
        run(again, self.record)
        self.assertEqual(os.stat(os.path.join(again, "m")).st_mtime_ns, OLD)

    def test_a_folder_with_a_file_added_keeps_now(self):
        self.built(self.clone("first"))
        with open(os.path.join(self.origin, "m", "0002.sql"), "w") as f:
            f.write("CREATE TABLE u (y INTEGER);\n")
        git(self.origin, "add", ".")
        git(self.origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "m2")
        again = self.clone("second")
        run(again, self.record)
        self.assertGreater(os.stat(os.path.join(again, "m")).st_mtime_ns, OLD)
        self.assertEqual(os.stat(os.path.join(again, "m", "0001.sql")).st_mtime_ns, OLD)


class NoCrateCompilesItsOwnPath(unittest.TestCase):
    """What makes times safe to give back at any path: the workspace's Rust code never compiles
    in the folder it was built from, and Leptos's server-function URLs use a fixed key."""

    REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def test_no_rust_file_names_its_build_folder(self):
        files = subprocess.run(
            ["git", "-C", self.REPO, "ls-files", "*.rs", ":!vendor/"],
            check=True, capture_output=True, text=True,
        ).stdout.split()
        found = []
        for name in files:
            with open(os.path.join(self.REPO, name), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    code = line.split("//")[0]
                    for macro in ('env!("CARGO_MANIFEST_DIR")', 'env!("CARGO_BIN_EXE',
                                  'env!("CARGO_TARGET_TMPDIR")'):
                        if macro in code:
                            found.append(f"{name}:{number}: {line.strip()}")
        self.assertEqual(found, [], "find these paths when the code runs (support::iris_bin, "
                         "support::server_dir), never compiled in")

    def test_server_functions_are_named_by_a_fixed_key(self):
        with open(os.path.join(self.REPO, ".cargo", "config.toml")) as f:
            self.assertRegex(f.read(), r'(?m)^SERVER_FN_OVERRIDE_KEY = "[^"]+"$')


if __name__ == "__main__":
    unittest.main()
