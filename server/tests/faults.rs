//! The fault run (BENCHMARKS.md "Fault run", docs/liveness.md): real `iris serve` processes,
//! a real Maildir, the scripted model on loopback, and cards approved (and some rejected) at a
//! steady pace while faults are injected at random:
//!
//! - kill -9 of a server (started again at once);
//! - SIGSTOP of a server past its lease, then SIGCONT;
//! - a store unit that fails (`IRIS_FAILPOINT_FAIL_ONCE`: every lifecycle unit, several times
//!   each, in every server process started);
//! - a busy mail lock (the harness holds it for a few seconds; PostgreSQL);
//! - a dropped client (an answer whose connection is cut as soon as it is sent);
//! - a concurrent chat turn in the card's conversation;
//! - a hung upstream: every fourth card is an MCP agent's pinned write through the gateway
//!   (the official Python SDK's client and a notes server made with its server, one per IRIS
//!   process), and a third of those are calls the upstream never answers.
//!
//! Then it checks every card: `executed_twice` (a call that moved its mail, or wrote its note,
//! more than once),
//! `stalled` (a decided card not ended within lease + execute timeout + 10 s of its decision),
//! `lost` (a card that disappeared, or whose accepted answer was not recorded), `wrong_story`
//! (the card and the mailbox disagree: executed but not moved exactly once, not run but moved,
//! or two servers reading different outcomes). It prints one line per run:
//!
//! `FAULTS engine=postgres servers=3 seed=… cards=N injected=N executed_twice=0 stalled=0 lost=0 wrong_story=0 p99_end_s=…`
//!
//! and exits non-zero on any non-zero count. `cargo test` runs the short version (16 cards on PostgreSQL,
//! 3 servers; 8 on SQLite, 1 server with kill -9 and restart); the figure BENCHMARKS.md reports is
//! `IRIS_FAULTS_CARDS=300 cargo test -p server --test faults` (`IRIS_FAULTS_SEED` repeats one).

#[path = "it/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use support::{snapshot, Iris, ModelServer, World};
use tokio::sync::Mutex;

const LEASE_SECS: u64 = 2;
const EXECUTE_TIMEOUT_SECS: u64 = 5;

/// Every lifecycle unit, three times each, failing once per mention in each process started.
fn unit_faults() -> String {
    iris_core::failpoint::FAIL_UNITS
        .iter()
        .flat_map(|u| [*u; 3])
        .collect::<Vec<_>>()
        .join(",")
}

/// A small deterministic generator (the run prints its seed; the same seed, the same run).
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// One offer message per card, found only by its code.
fn offer(maildir: &std::path::Path, n: usize) {
    let text = format!(
        "From: Northwind Deals <deals@northwind.example>\r\nTo: owner@example.org\r\n\
         Subject: Offer x{n:04}x\r\nDate: {}\r\nMessage-ID: <offer-{n}@northwind.example>\r\n\
         List-Unsubscribe: <mailto:unsub@northwind.example>\r\n\r\nBuy now.\r\n",
        chrono::Utc::now().to_rfc2822()
    );
    std::fs::write(
        maildir.join(format!("cur/18000{n:05}.M{n}P1.host:2,S")),
        text,
    )
    .unwrap();
}

struct Fleet {
    world: World,
    servers: Vec<Mutex<Option<Iris>>>,
}

impl Fleet {
    fn start(world: &World) -> Iris {
        let faults = unit_faults();
        let mut command_env: Vec<(&str, &str)> = vec![("IRIS_FAILPOINT_FAIL_ONCE", &faults)];
        command_env.push(("RUST_LOG", "error"));
        let (iris, rx) = world.start_watched(&command_env);
        // Drain its stderr (echoed by the watcher thread).
        std::thread::spawn(move || for _ in rx {});
        iris
    }

    async fn url(&self, i: usize) -> Option<String> {
        self.servers[i].lock().await.as_ref().map(|s| s.url.clone())
    }

    /// POSTs `body` to `path` on server `start` or the next that answers: the status and body.
    async fn post(
        &self,
        start: usize,
        path: &str,
        token: &str,
        body: &Value,
    ) -> (StatusCode, Value) {
        let http = reqwest::Client::new();
        for attempt in 0..400 {
            let i = (start + attempt) % self.servers.len();
            let Some(url) = self.url(i).await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            match http
                .post(format!("{url}{path}"))
                .bearer_auth(token)
                .json(body)
                .timeout(Duration::from_secs(30))
                .send()
                .await
            {
                Ok(r) if !r.status().is_server_error() => {
                    let status = r.status();
                    return (status, r.json().await.unwrap_or(Value::Null));
                }
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("no server answered {path}");
    }

    /// An agent's pinned write of the note `text` through server `start` (or the next that
    /// answers), held past the gateway's hold window: the card's approval id. `None` when no
    /// server made a card. A retry after a server died attaches to the same card (the same
    /// call by the same agent).
    async fn gateway_card(&self, start: usize, token: &str, text: &str) -> Option<String> {
        let steps = json!([{"call": "append_note", "args": {"text": text}}]);
        for attempt in 0..20 {
            let i = (start + attempt) % self.servers.len();
            let Some(url) = self.url(i).await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let out = tokio::process::Command::new("python3")
                .arg(support::mcp::script("agent.py"))
                .args(["http", &format!("{url}/mcp/notes"), token])
                .arg(steps.to_string())
                .output()
                .await
                .expect("python3 runs");
            let answer = String::from_utf8_lossy(&out.stdout)
                .lines()
                .find_map(|l| serde_json::from_str::<Value>(l).ok());
            if let Some(id) = answer
                .as_ref()
                .and_then(|a| a["meta"]["iris/approval_id"].as_str())
            {
                return Some(id.to_owned());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        None
    }

    /// GETs a card through server `i` (or the next that answers).
    async fn card(&self, start: usize, id: &str, token: &str) -> Option<Value> {
        let http = reqwest::Client::new();
        for attempt in 0..200 {
            let i = (start + attempt) % self.servers.len();
            let Some(url) = self.url(i).await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            match http
                .get(format!("{url}/governance/approvals/{id}"))
                .bearer_auth(token)
                .timeout(Duration::from_secs(10))
                .send()
                .await
            {
                Ok(r) if r.status() == StatusCode::NOT_FOUND => return None,
                Ok(r) if r.status().is_success() => return r.json().await.ok(),
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        panic!("no server answered for card {id}");
    }
}

/// Whether `row` has ended (docs/liveness.md).
fn ended(row: &Value) -> bool {
    match row["status"].as_str() {
        Some("approved") => matches!(
            row["execution"].as_str(),
            Some("executed" | "failed" | "unknown")
        ),
        Some("rejected" | "expired") => true,
        _ => false,
    }
}

/// Each decided card: approved or not, when its answer was accepted, its number.
type Decided = BTreeMap<String, (bool, Instant, usize)>;

/// Each ended card: how long after its answer it was seen ended, and the row then (`None`:
/// the card had disappeared, `Duration::MAX`).
type Ends = BTreeMap<String, (Duration, Option<Value>)>;

struct Tally {
    injected: AtomicUsize,
}

async fn run(engine: &str, servers: usize, cards: usize, seed: u64) -> bool {
    let (url, _database) = if engine == "postgres" {
        let (url, db) = iris_store::testing::fresh_postgres_database().await;
        (Some(url), Some(db))
    } else {
        (None, None)
    };
    let model = ModelServer::start(&support::scripts::offer_trash()).await;
    let mut world = World::new(&model.base_url);
    if let Some(url) = &url {
        world.database_url = url.clone();
    }
    world.env = vec![
        ("IRIS_LEASE_SECS".into(), LEASE_SECS.to_string()),
        ("IRIS_SWEEP_SECS".into(), "1".into()),
        ("IRIS_MAIL_SYNC_SECS".into(), "0".into()),
        (
            "IRIS_EXECUTE_TIMEOUT_SECS".into(),
            EXECUTE_TIMEOUT_SECS.to_string(),
        ),
    ];
    world.env.push(("IRIS_MCP_HOLD_SECS".into(), "1".into()));
    // The notes upstream, one stdio process per IRIS server, all on one folder.
    let notes = world.dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        world.dir.path().join("iris.toml"),
        format!(
            "[[mcp.upstreams]]\nname = \"notes\"\ncommand = [\"python3\", {:?}, \"stdio\", {:?}]\nmanifest = {:?}\n",
            support::mcp::script("notes_server.py").display().to_string(),
            notes.display().to_string(),
            support::mcp::script("notes.yaml").display().to_string(),
        ),
    )
    .unwrap();
    for n in 0..cards {
        offer(&world.maildir, n);
    }
    let token = world.add_device("phone", "control");
    let agent = world.add_device("goose", "agent");
    let fleet = Arc::new(Fleet {
        servers: (0..servers)
            .map(|_| Mutex::new(Some(Fleet::start(&world))))
            .collect(),
        world,
    });
    let tally = Arc::new(Tally {
        injected: AtomicUsize::new(servers * 3 * iris_core::failpoint::FAIL_UNITS.len()),
    });

    // Faults at random while the cards flow.
    let stop = Arc::new(AtomicBool::new(false));
    let chaos = {
        let (fleet, stop, tally, url) = (fleet.clone(), stop.clone(), tally.clone(), url.clone());
        tokio::spawn(async move {
            let mut dice = Dice(seed ^ 0x9e37_79b9);
            while !stop.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(700 + dice.below(1300))).await;
                let i = dice.below(fleet.servers.len() as u64) as usize;
                match dice.below(3) {
                    // kill -9, then start again.
                    0 => {
                        let mut slot = fleet.servers[i].lock().await;
                        if let Some(server) = slot.take() {
                            server.kill();
                        }
                        *slot = Some(Fleet::start(&fleet.world));
                    }
                    // SIGSTOP past the lease, then SIGCONT.
                    1 => {
                        let slot = fleet.servers[i].lock().await;
                        if let Some(server) = slot.as_ref() {
                            server.signal("STOP");
                            tokio::time::sleep(Duration::from_secs(LEASE_SECS + 1)).await;
                            server.signal("CONT");
                        }
                    }
                    // The mail lock held busy for a few seconds (PostgreSQL: every server's).
                    _ => {
                        if let Some(url) = &url {
                            use sqlx::Connection;
                            let mut c = sqlx::PgConnection::connect(url).await.unwrap();
                            sqlx::query("SELECT pg_advisory_lock(hashtext('iris:mail-changes'))")
                                .execute(&mut c)
                                .await
                                .unwrap();
                            tokio::time::sleep(Duration::from_secs(3)).await;
                            let _ = c.close().await;
                        } else {
                            continue;
                        }
                    }
                }
                tally.injected.fetch_add(1, Ordering::SeqCst);
            }
        })
    };

    // The cards: requested, then answered at a steady pace (7 in 10 approved); a fifth of the
    // answers' clients drop their connection at once, and a fifth of the cards get another chat
    // turn in their conversation right after the answer.
    let mut dice = Dice(seed);
    let mut hung: Vec<usize> = Vec::new();
    let decided: Arc<Mutex<Decided>> = Arc::default();
    let mut lost = 0usize;
    // Every decided card is watched from its decision on, concurrently with the run, so its
    // end is timed from the moment it could be seen (within one round of reads).
    let ends: Arc<Mutex<Ends>> = Arc::default();
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let (fleet, decided, ends, watching, token) = (
            fleet.clone(),
            decided.clone(),
            ends.clone(),
            watching.clone(),
            token.clone(),
        );
        tokio::spawn(async move {
            use futures::StreamExt;
            while watching.load(Ordering::SeqCst) {
                let open: Vec<(String, Instant)> = {
                    let ends = ends.lock().await;
                    decided
                        .lock()
                        .await
                        .iter()
                        .filter(|(id, _)| !ends.contains_key(*id))
                        .map(|(id, (_, at, _))| (id.clone(), *at))
                        .collect()
                };
                let reads = futures::stream::iter(open.into_iter().enumerate())
                    .map(|(i, (id, at))| {
                        let (fleet, token) = (fleet.clone(), token.clone());
                        async move {
                            let row = fleet.card(i, &id, &token).await;
                            (id, at, row)
                        }
                    })
                    .buffer_unordered(16)
                    .collect::<Vec<_>>()
                    .await;
                let mut ends = ends.lock().await;
                for (id, at, row) in reads {
                    match row {
                        Some(row) if ended(&row) => {
                            ends.insert(id, (at.elapsed(), Some(row)));
                        }
                        Some(_) => {}
                        None => {
                            ends.insert(id, (Duration::MAX, None));
                        }
                    }
                }
                drop(ends);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    for n in 0..cards {
        let start = n % servers;
        // Every fourth card an agent's pinned write through the gateway (a third of them hang
        // upstream); the others the owner's mail clean-up in a conversation of its own.
        let (id, conversation) = if n % 4 == 3 {
            let hang = dice.below(3) == 0;
            if hang {
                tally.injected.fetch_add(1, Ordering::SeqCst);
                hung.push(n);
            }
            let text = format!("{} x{n:04}x", if hang { "hang" } else { "note" });
            let Some(id) = fleet.gateway_card(start, &agent, &text).await else {
                eprintln!("card {n}: no gateway card");
                lost += 1;
                continue;
            };
            (id, None)
        } else {
            let (status, halted) = fleet
                .post(
                    start,
                    "/api/chat",
                    &token,
                    &json!({"message": format!("trash offer x{n:04}x")}),
                )
                .await;
            if status != StatusCode::OK || halted["status"] != "awaiting_approval" {
                eprintln!("card {n}: no card ({status}): {halted}");
                lost += 1;
                continue;
            }
            let id = halted["approval_id"].as_str().unwrap().to_string();
            (id, Some(halted["conversation_id"].clone()))
        };
        let approve = dice.below(10) < 7;
        let decision = if approve { "approve" } else { "reject" };
        if dice.below(5) == 0 {
            // A dropped client: the answer is sent and the connection cut at once. The server
            // runs it to its end anyway; the harness then answers again (409 = it landed).
            tally.injected.fetch_add(1, Ordering::SeqCst);
            if let Some(url) = fleet.url(start).await {
                let _ = reqwest::Client::new()
                    .post(format!("{url}/governance/approvals/{id}/respond"))
                    .bearer_auth(&token)
                    .json(&json!({"decision": decision}))
                    .timeout(Duration::from_millis(1))
                    .send()
                    .await;
            }
        }
        let (status, body) = fleet
            .post(
                start,
                &format!("/governance/approvals/{id}/respond"),
                &token,
                &json!({"decision": decision}),
            )
            .await;
        if !(status == StatusCode::OK || status == StatusCode::CONFLICT) {
            eprintln!("card {n}: answer refused ({status}): {body}");
            lost += 1;
            continue;
        }
        decided
            .lock()
            .await
            .insert(id.clone(), (approve, Instant::now(), n));
        if let Some(conversation) = conversation.filter(|_| dice.below(5) == 0) {
            tally.injected.fetch_add(1, Ordering::SeqCst);
            let (fleet, token) = (fleet.clone(), token.clone());
            tokio::spawn(async move {
                let _ = fleet
                    .post(
                        start + 1,
                        "/api/chat",
                        &token,
                        &json!({"message": "and what else is new?", "conversation_id": conversation}),
                    )
                    .await;
            });
        }
        // The pace: no queue builds up behind the faults.
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    // Every decided card must end within the bound: wait for the last ones, for at most the
    // bound and half a minute more.
    let bound = Duration::from_secs(LEASE_SECS + EXECUTE_TIMEOUT_SECS + 10);
    let watch_until = Instant::now() + bound + Duration::from_secs(30);
    loop {
        let total = decided.lock().await.len();
        if ends.lock().await.len() >= total || Instant::now() >= watch_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    watching.store(false, Ordering::SeqCst);
    watcher.await.unwrap();
    let decided = decided.lock().await.clone();
    let ends = ends.lock().await.clone();
    stop.store(true, Ordering::SeqCst);
    chaos.await.unwrap();

    // Let every server's jobs settle (a stopped one is running again), then count.
    let files = snapshot(&fleet.world.maildir);
    let trash: Vec<String> = files
        .iter()
        .filter(|(k, _)| k.starts_with(".Trash/"))
        .map(|(_, v)| String::from_utf8_lossy(v).to_string())
        .collect();
    // The notes written: one line per executed gateway card (a hung call writes none).
    let written = std::fs::read_to_string(notes.join("notes.txt")).unwrap_or_default();
    let (mut executed_twice, mut stalled, mut wrong_story) = (0usize, 0usize, 0usize);
    let mut times: Vec<f64> = Vec::new();
    for (id, (approve, _, n)) in &decided {
        let code = format!("x{n:04}x");
        let moved = if n % 4 == 3 {
            written.lines().filter(|l| l.contains(&code)).count()
        } else {
            trash.iter().filter(|m| m.contains(&code)).count()
        };
        if moved > 1 {
            executed_twice += 1;
        }
        let Some((end, row)) = ends.get(id) else {
            eprintln!("card {n} ({id}) did not end");
            stalled += 1;
            continue;
        };
        let Some(row) = row else {
            lost += 1;
            continue;
        };
        if *end > bound {
            eprintln!("card {n} ({id}) ended after {end:?}");
            stalled += 1;
        }
        times.push(end.as_secs_f64());
        let second = fleet.card(n + 1, id, &token).await;
        let story = match (row["status"].as_str(), row["execution"].as_str()) {
            (Some("approved"), Some("executed")) => *approve && moved == 1,
            (Some("approved"), Some("unknown")) => *approve && moved <= 1,
            (Some("approved"), Some("failed")) => *approve && moved == 0,
            (Some("rejected"), _) => !*approve && moved == 0,
            _ => false,
        };
        let same = second.is_some_and(|s| s["execution"] == row["execution"] || !ended(&s));
        if !story || !same {
            eprintln!(
                "card {n} ({id}): the card says {} / {} but {moved} moved",
                row["status"], row["execution"]
            );
            wrong_story += 1;
        }
    }
    // How the calls the upstream never answered ended (approved ones: `unknown` at the
    // execute deadline, or `failed` when they never started).
    let mut hung_ends: BTreeMap<String, usize> = BTreeMap::new();
    for (id, (_, _, n)) in &decided {
        if hung.contains(n) {
            let row = ends.get(id).and_then(|(_, row)| row.as_ref());
            let end = row.map_or("not ended".to_string(), |r| {
                format!(
                    "{}/{}",
                    r["status"].as_str().unwrap_or("?"),
                    r["execution"].as_str().unwrap_or("-")
                )
            });
            *hung_ends.entry(end).or_default() += 1;
        }
    }
    eprintln!("hung upstream calls, by end: {hung_ends:?}");
    times.sort_by(f64::total_cmp);
    let p99 = times
        .get(((times.len() as f64) * 0.99).ceil() as usize - 1)
        .copied()
        .unwrap_or(0.0);
    println!(
        "FAULTS engine={engine} servers={servers} seed={seed} cards={} injected={} executed_twice={executed_twice} stalled={stalled} lost={lost} wrong_story={wrong_story} p99_end_s={p99:.1}",
        decided.len(),
        tally.injected.load(Ordering::SeqCst),
    );
    executed_twice == 0 && stalled == 0 && lost == 0 && wrong_story == 0
}

fn main() {
    let cards: usize = std::env::var("IRIS_FAULTS_CARDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let seed: u64 = std::env::var("IRIS_FAULTS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(1)
        });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    let postgres = runtime.block_on(run("postgres", 3, cards, seed));
    let sqlite = runtime.block_on(run("sqlite", 1, cards.div_ceil(2), seed));
    if !(postgres && sqlite) {
        std::process::exit(1);
    }
}
