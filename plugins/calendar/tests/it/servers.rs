//! Real CalDAV servers on loopback, each with a temporary store, started by the tests:
//! Radicale (with `--auth-type htpasswd` set explicitly: its default denies everyone; user
//! `alice`, password `secret`) and Xandikos (no authentication; its default calendar). Both come
//! from the virtual environment `scripts/setup.sh` makes ($IRIS_CALDAV_VENV): a CalDAV test never
//! passes by not running.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The password of Radicale's `alice`, in the variable the account's `password_env` names.
pub const PASSWORD_ENV: &str = "IRIS_TEST_CALDAV_PASSWORD";

/// One running server; killed when dropped.
pub struct CaldavServer {
    child: Child,
    /// Its name, for messages.
    pub kind: &'static str,
    /// The calendar home the account's `url` names.
    pub home: String,
    /// The one calendar collection the tests use (under `home`).
    pub calendar: String,
    /// The login, when the server asks for one.
    pub username: Option<String>,
    _store: tempfile::TempDir,
}

impl Drop for CaldavServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn venv_bin(name: &str) -> PathBuf {
    let venv = std::env::var_os("IRIS_CALDAV_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/iris/venv-caldav")
        });
    let bin = venv.join("bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: run `bash scripts/setup.sh` (it installs Radicale and Xandikos)",
        bin.display()
    );
    bin
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free 127.0.0.1 port")
}

/// Waits until `port` answers HTTP (any status), at most 20 s.
async fn answering(port: u16, child: &mut Child, kind: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let client = reqwest::Client::new();
    loop {
        if client
            .request(
                reqwest::Method::OPTIONS,
                format!("http://127.0.0.1:{port}/"),
            )
            .send()
            .await
            .is_ok()
        {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{kind} exited at start-up ({status})");
        }
        assert!(
            Instant::now() < deadline,
            "{kind} did not answer on {port} within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Radicale 3.9 with user `alice` (password `secret`, set in [`PASSWORD_ENV`]) and her
/// calendar `home`, made with `MKCALENDAR`.
pub async fn radicale() -> CaldavServer {
    let store = tempfile::tempdir().unwrap();
    let users = store.path().join("users");
    std::fs::write(&users, "alice:secret\n").unwrap();
    let port = free_port();
    let mut child = Command::new(venv_bin("radicale"))
        .args(["--server-hosts", &format!("127.0.0.1:{port}")])
        .args([
            "--storage-filesystem-folder",
            &store.path().join("collections").to_string_lossy(),
        ])
        .args(["--auth-type", "htpasswd"])
        .args(["--auth-htpasswd-filename", &users.to_string_lossy()])
        .args(["--auth-htpasswd-encryption", "plain"])
        .args(["--logging-level", "warning"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting radicale");
    answering(port, &mut child, "radicale").await;
    std::env::set_var(PASSWORD_ENV, "secret");
    let home = format!("http://127.0.0.1:{port}/alice/");
    let calendar = format!("{home}home/");
    let made = reqwest::Client::new()
        .request(
            reqwest::Method::from_bytes(b"MKCALENDAR").unwrap(),
            &calendar,
        )
        .basic_auth("alice", Some("secret"))
        .header("Content-Type", "application/xml")
        .body(
            r#"<?xml version="1.0" encoding="utf-8"?>
<c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
  <d:set><d:prop><d:displayname>Home</d:displayname></d:prop></d:set>
</c:mkcalendar>"#,
        )
        .send()
        .await
        .expect("MKCALENDAR");
    assert!(made.status().is_success(), "MKCALENDAR: {}", made.status());
    CaldavServer {
        child,
        kind: "radicale",
        home,
        calendar,
        username: Some("alice".into()),
        _store: store,
    }
}

/// Xandikos 0.4 with its default calendar (`--defaults`: `/user/calendars/calendar/`).
pub async fn xandikos() -> CaldavServer {
    let store = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut child = Command::new(venv_bin("xandikos"))
        .arg("serve")
        .args(["-d", &store.path().join("dav").to_string_lossy()])
        .args(["--state-dir", &store.path().join("state").to_string_lossy()])
        .args(["-l", "127.0.0.1", "-p", &port.to_string()])
        .args(["--defaults", "--no-detect-systemd"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting xandikos");
    answering(port, &mut child, "xandikos").await;
    let home = format!("http://127.0.0.1:{port}/user/calendars/");
    CaldavServer {
        child,
        kind: "xandikos",
        calendar: format!("{home}calendar/"),
        home,
        username: None,
        _store: store,
    }
}

impl CaldavServer {
    fn client(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let request = reqwest::Client::new().request(method, url);
        match &self.username {
            Some(user) => request.basic_auth(user, Some("secret")),
            None => request,
        }
    }

    /// Puts `text` at `name` in the test calendar, as another client would.
    pub async fn put(&self, name: &str, text: &str) {
        let r = self
            .client(reqwest::Method::PUT, &format!("{}{name}", self.calendar))
            .header("Content-Type", "text/calendar; charset=utf-8")
            .body(text.to_string())
            .send()
            .await
            .expect("PUT");
        assert!(
            r.status().is_success(),
            "{} PUT {name}: {}",
            self.kind,
            r.status()
        );
    }

    /// The resource at `name`, or `None` (404).
    pub async fn get(&self, name: &str) -> Option<String> {
        let r = self
            .client(reqwest::Method::GET, &format!("{}{name}", self.calendar))
            .send()
            .await
            .expect("GET");
        if r.status() == reqwest::StatusCode::NOT_FOUND {
            return None;
        }
        assert!(
            r.status().is_success(),
            "{} GET {name}: {}",
            self.kind,
            r.status()
        );
        Some(r.text().await.unwrap())
    }
}
