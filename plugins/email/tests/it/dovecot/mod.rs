//! A private Dovecot per test, for the IMAP backend's tests (and the server's IMAP test, which
//! includes this file by path).
//!
//! [`Dovecot::start`] writes `dovecot.conf` from the committed template `dovecot.conf.in` into
//! a temp folder that also holds base_dir (`run/`), state_dir, the log and the mail root
//! (`home/owner/Maildir`, owned by the system user `vmail`), picks a free 127.0.0.1 port, runs
//! `dovecot -c FILE` and waits for the IMAP greeting (polling with a deadline). Dropping it stops
//! that Dovecot by the pid in `run/master.pid` and waits until it is gone. The user is `owner`
//! with password [`PASSWORD`], read by the backend from [`PASSWORD_ENV`].
//!
//! Without `/usr/sbin/dovecot` or the `vmail` user the tests FAIL, saying to run
//! `scripts/setup.sh`: an IMAP test never passes by not running.
#![allow(dead_code, missing_docs)]

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Once;
use std::time::{Duration, Instant};

/// The test user's password.
pub const PASSWORD: &str = "dovecot-test-secret";
/// The environment variable the test accounts name as `password_env`.
pub const PASSWORD_ENV: &str = "IRIS_TEST_IMAP_PASSWORD";
/// The test user's login.
pub const USER: &str = "owner";

const DOVECOT: &str = "/usr/sbin/dovecot";
const TEMPLATE: &str = include_str!("dovecot.conf.in");

/// One running Dovecot, stopped on drop.
pub struct Dovecot {
    root: tempfile::TempDir,
    /// The IMAP port on 127.0.0.1.
    pub port: u16,
    uid: u32,
    gid: u32,
}

/// The uid and gid of the `vmail` user, from /etc/passwd.
fn vmail_ids() -> Option<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&"vmail") && f.len() > 3)
            .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
            .flatten()
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free 127.0.0.1 port")
}

/// Whether an IMAP greeting arrives on the port.
fn greets(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 256];
    matches!(s.read(&mut buf), Ok(n) if n > 4 && buf.starts_with(b"* OK"))
        && s.write_all(b"z LOGOUT\r\n").is_ok()
}

impl Dovecot {
    /// Starts a private Dovecot (see the module docs).
    pub fn start() -> Dovecot {
        Dovecot::start_with("")
    }

    /// Starts a private Dovecot with `extra` lines appended to the template (e.g. an
    /// `imap_capability` without MOVE).
    pub fn start_with(extra: &str) -> Dovecot {
        assert!(
            Path::new(DOVECOT).exists(),
            "{DOVECOT} is missing: run `bash scripts/setup.sh` (it \
             installs dovecot-imapd and the vmail user the IMAP tests need)"
        );
        let (uid, gid) = vmail_ids().expect(
            "the system user `vmail` is missing: run `bash \
             scripts/setup.sh` (Dovecot serves the test mail as vmail, never as root)",
        );
        static PASSWORD_SET: Once = Once::new();
        PASSWORD_SET.call_once(|| std::env::set_var(PASSWORD_ENV, PASSWORD));

        let mut last_log = String::new();
        for _attempt in 0..3 {
            let root = tempfile::tempdir().expect("temp folder");
            let dir = root.path().to_path_buf();
            // Dovecot's unprivileged login processes must reach base_dir inside it.
            set_mode(&dir, 0o755);
            let home = dir.join("home");
            fs::create_dir_all(home.join(USER)).unwrap();
            let port = free_port();
            let conf = TEMPLATE
                .replace("@ROOT@", &dir.to_string_lossy())
                .replace("@PORT@", &port.to_string())
                + extra;
            fs::write(dir.join("dovecot.conf"), conf).unwrap();
            fs::write(
                dir.join("passwd"),
                format!("{USER}:{{PLAIN}}{PASSWORD}::::::\n"),
            )
            .unwrap();
            let d = Dovecot {
                root,
                port,
                uid,
                gid,
            };
            d.chown_mail();
            let status = Command::new(DOVECOT)
                .arg("-c")
                .arg(dir.join("dovecot.conf"))
                .status()
                .expect("running dovecot");
            let deadline = Instant::now() + Duration::from_secs(15);
            while status.success() && Instant::now() < deadline {
                if greets(port) {
                    return d;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            last_log = fs::read_to_string(dir.join("dovecot.log")).unwrap_or_default();
            // Dropping `d` stops whatever started; try another port.
        }
        panic!("Dovecot did not greet on 127.0.0.1 within 15 s (3 attempts); its log:\n{last_log}");
    }

    /// An IMAP account on this Dovecot (plain TCP to loopback; password from [`PASSWORD_ENV`]).
    pub fn account(&self, name: &str) -> iris_email::AccountConfig {
        iris_email::AccountConfig {
            name: name.into(),
            address: format!("{USER}@example.org"),
            kind: iris_email::AccountKind::Imap {
                host: "127.0.0.1".into(),
                port: self.port,
                user: USER.into(),
                password_env: PASSWORD_ENV.into(),
            },
        }
    }

    /// Plays another IMAP client: logs in as the test user and runs each command (no tag), in
    /// order, panicking unless each ends OK; the server's whole answer.
    pub fn imap(&self, commands: &[&str]) -> String {
        use std::io::BufRead;
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to Dovecot");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut writer = stream.try_clone().unwrap();
        let mut reader = std::io::BufReader::new(stream);
        let mut out = String::new();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap(); // greeting
        let login = format!("LOGIN {USER} {PASSWORD}");
        for (n, cmd) in std::iter::once(login.as_str())
            .chain(commands.iter().copied())
            .chain(std::iter::once("LOGOUT"))
            .enumerate()
        {
            let tag = format!("t{n}");
            writer
                .write_all(format!("{tag} {cmd}\r\n").as_bytes())
                .unwrap();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap() == 0 {
                    panic!("Dovecot closed during `{cmd}`; so far:\n{out}");
                }
                out.push_str(&line);
                if let Some(rest) = line.strip_prefix(&format!("{tag} ")) {
                    assert!(rest.starts_with("OK"), "`{cmd}` failed: {line}\n{out}");
                    break;
                }
            }
        }
        out
    }

    /// The temp folder holding everything.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The user's Maildir root (INBOX).
    pub fn maildir(&self) -> PathBuf {
        self.root.path().join("home").join(USER).join("Maildir")
    }

    /// The Maildir++ folder of an IMAP folder name (`INBOX` is the root, `Trash` is `.Trash`).
    pub fn folder_dir(&self, folder: &str) -> PathBuf {
        if folder.eq_ignore_ascii_case("INBOX") {
            self.maildir()
        } else {
            self.maildir().join(format!(".{folder}"))
        }
    }

    /// Delivers one message into a folder as a new file (creating the folder as Maildir++ does);
    /// Dovecot sees it at its next look at the folder.
    pub fn deliver(&self, folder: &str, name: &str, bytes: &[u8]) -> PathBuf {
        let dir = self.folder_dir(folder);
        for sub in ["cur", "new", "tmp"] {
            fs::create_dir_all(dir.join(sub)).unwrap();
        }
        if !folder.eq_ignore_ascii_case("INBOX") {
            fs::write(dir.join("maildirfolder"), b"").unwrap();
        }
        let tmp = dir.join("tmp").join(name);
        fs::write(&tmp, bytes).unwrap();
        let dest = dir.join("new").join(name);
        fs::rename(&tmp, &dest).unwrap();
        self.chown_mail();
        dest
    }

    /// The message files of a folder (`cur/` and `new/`), contents sorted.
    pub fn messages(&self, folder: &str) -> Vec<Vec<u8>> {
        let dir = self.folder_dir(folder);
        let mut out = Vec::new();
        for sub in ["cur", "new"] {
            if let Ok(rd) = fs::read_dir(dir.join(sub)) {
                for e in rd.flatten() {
                    out.push(fs::read(e.path()).unwrap());
                }
            }
        }
        out.sort();
        out
    }

    /// Number of message files in a folder.
    pub fn count(&self, folder: &str) -> usize {
        self.messages(folder).len()
    }

    /// Hands everything under the mail root to vmail (files the test wrote as root).
    pub fn chown_mail(&self) {
        fn walk(p: &Path, uid: u32, gid: u32) {
            let _ = std::os::unix::fs::chown(p, Some(uid), Some(gid));
            if p.is_dir() {
                if let Ok(rd) = fs::read_dir(p) {
                    for e in rd.flatten() {
                        walk(&e.path(), uid, gid);
                    }
                }
            }
        }
        walk(&self.root.path().join("home"), self.uid, self.gid);
    }

    /// Dovecot's log so far (for assertion messages).
    pub fn log(&self) -> String {
        fs::read_to_string(self.root.path().join("dovecot.log")).unwrap_or_default()
    }

    fn master_pid(&self) -> Option<u32> {
        fs::read_to_string(self.root.path().join("run").join("master.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

/// Whether a process runs (a zombie left for an init that does not reap counts as gone).
fn running(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

impl Drop for Dovecot {
    fn drop(&mut self) {
        let Some(pid) = self.master_pid() else {
            return;
        };
        let _ = Command::new("kill").arg(pid.to_string()).status();
        // Wait until the master is gone (it removes its children first), so the temp folder
        // is not pulled from under a running Dovecot.
        let deadline = Instant::now() + Duration::from_secs(10);
        while running(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
