//! An SMTP sink for tests: `python3 -m aiosmtpd -n -l 127.0.0.1:PORT -c
//! aiosmtpd.handlers.Mailbox DIR`, one per test on a free port, capturing every message into the
//! Maildir `DIR`. Ready when its port accepts a connection (polled against a deadline); killed
//! when dropped. Without aiosmtpd the test fails, saying how to install it.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the sink may take to start listening.
const START_DEADLINE: Duration = Duration::from_secs(20);

/// A running sink.
pub struct SmtpSink {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// The Maildir it writes (created by aiosmtpd).
    pub dir: PathBuf,
    _root: tempfile::TempDir,
}

impl SmtpSink {
    /// Starts a sink on a free loopback port.
    ///
    /// # Panics
    /// When aiosmtpd is not installed (run `bash scripts/setup.sh`) or
    /// the sink does not listen before the deadline.
    pub fn start() -> SmtpSink {
        let has_aiosmtpd = Command::new("python3")
            .args(["-c", "import aiosmtpd"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            has_aiosmtpd,
            "the SMTP sink needs python3's aiosmtpd, which is not installed: run `bash scripts/setup.sh` (it installs aiosmtpd)"
        );
        let root = tempfile::tempdir().unwrap();
        // aiosmtpd's Mailbox handler creates the Maildir itself and wants it not to exist yet.
        let dir = root.path().join("captured");
        // A free port: bind port 0, read it, release it for the sink.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut child = Command::new("python3")
            .args(["-m", "aiosmtpd", "-n", "-l"])
            .arg(addr.to_string())
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting python3 -m aiosmtpd");
        let deadline = Instant::now() + START_DEADLINE;
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the aiosmtpd sink exited before listening on {addr}: {status}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the aiosmtpd sink did not listen on {addr} within {START_DEADLINE:?}");
            }
            // The condition is the open port (above); this only spaces the attempts.
            std::thread::sleep(Duration::from_millis(25));
        }
        SmtpSink {
            child,
            addr,
            dir,
            _root: root,
        }
    }

    /// `smtp://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    /// Every captured message, raw.
    pub fn messages(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for sub in ["new", "cur"] {
            if let Ok(rd) = std::fs::read_dir(self.dir.join(sub)) {
                for e in rd {
                    out.push(std::fs::read(e.unwrap().path()).unwrap());
                }
            }
        }
        out
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How [`FlakySmtp`] ends each message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaky {
    /// Takes the whole message, then drops the connection without a reply: nobody knows whether
    /// it was delivered.
    DropAfterData,
    /// Takes the whole message, then refuses it with `554`.
    Reject,
}

/// A minimal SMTP server on loopback (tokio, in-process) that misbehaves at the end of DATA as
/// told, counting the messages it was handed. Stops when dropped.
pub struct FlakySmtp {
    /// Where it listens.
    pub addr: SocketAddr,
    datas: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl FlakySmtp {
    /// Starts it on a free port (inside a tokio runtime).
    pub async fn start(mode: Flaky) -> FlakySmtp {
        use std::sync::atomic::Ordering;
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let datas = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = datas.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let (r, mut w) = sock.into_split();
                let mut lines = BufReader::new(r).lines();
                if w.write_all(b"220 flaky ESMTP\r\n").await.is_err() {
                    continue;
                }
                let mut in_data = false;
                while let Ok(Some(line)) = lines.next_line().await {
                    let reply: &[u8] = if in_data {
                        if line != "." {
                            continue;
                        }
                        in_data = false;
                        seen.fetch_add(1, Ordering::SeqCst);
                        match mode {
                            Flaky::DropAfterData => break,
                            Flaky::Reject => b"554 5.7.1 rejected by policy\r\n",
                        }
                    } else {
                        match line
                            .split_whitespace()
                            .next()
                            .unwrap_or("")
                            .to_uppercase()
                            .as_str()
                        {
                            "EHLO" => b"250-flaky\r\n250 8BITMIME\r\n",
                            "DATA" => {
                                in_data = true;
                                b"354 go ahead\r\n"
                            }
                            "QUIT" => b"221 bye\r\n",
                            _ => b"250 OK\r\n",
                        }
                    };
                    if w.write_all(reply).await.is_err() {
                        break;
                    }
                }
            }
        });
        FlakySmtp { addr, datas, task }
    }

    /// `smtp://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("smtp://{}", self.addr)
    }

    /// How many messages it was handed (ends of DATA seen).
    pub fn messages_handed(&self) -> usize {
        self.datas.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for FlakySmtp {
    fn drop(&mut self) {
        self.task.abort();
    }
}
