//! Several real `iris serve` processes on one PostgreSQL database (DESIGN §9):
//!
//! - a card requested through server A reaches server B's `/api/events`, and when B's
//!   `LISTEN` connection is terminated (`pg_terminate_backend`), the events of the gap still
//!   arrive once it reconnects;
//! - three servers, 200 cards answered at random through any of them while one server is killed
//!   (SIGKILL) and started again every couple of seconds: every approved call runs at most once
//!   (executed, or `unknown` with the owner told; never twice), nothing rejected runs, every
//!   decided row resumes exactly once, no mail is lost or duplicated, and no job is left
//!   unexplained.
//!
//! A second `iris serve` on one SQLite file refuses to start and says to use PostgreSQL.

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::Connection;
use support::{snapshot, Iris, ModelServer, World, CATEGORY_TRASH_SCRIPT};
use tokio::sync::Mutex;

/// Reads `/api/events` of `url` into a channel of (event name, data).
async fn events(url: &str, token: &str) -> tokio::sync::mpsc::UnboundedReceiver<(String, Value)> {
    let response = reqwest::Client::new()
        .get(format!("{url}/api/events"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut stream = response.bytes_stream();
        let mut buffer = String::new();
        while let Some(Ok(chunk)) = stream.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let mut name = String::new();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim());
                    }
                }
                if !name.is_empty()
                    && tx
                        .send((name, serde_json::from_str(&data).unwrap_or(Value::Null)))
                        .is_err()
                {
                    return;
                }
            }
        }
    });
    rx
}

/// Waits up to 10 s for `name` about approval `id` on `rx`.
async fn arrives(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Value)>,
    name: &str,
    id: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some((n, data))) if n == name && data["id"] == id => return,
            Ok(Some(_)) => continue,
            other => panic!("{name} of {id} never reached server B: {other:?}"),
        }
    }
}

// Needs a process: several servers on one database.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_requested_on_one_server_reaches_another_even_across_a_dropped_listener() {
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let mut world = World::new(&model.base_url);
    world.database_url = url.clone();
    iris_email::demo::write_demo_maildir(&world.maildir, chrono::Utc::now()).unwrap();
    let token = world.add_device("phone", "control");
    let a = world.start();
    let b = world.start();
    let mut on_b = events(&b.url, &token).await;

    let (_, first) = a
        .client()
        .post(
            "/api/chat",
            Some(&token),
            json!({"message": "trash the promo emails"}),
        )
        .await;
    let first = first["approval_id"].as_str().unwrap().to_string();
    arrives(&mut on_b, "approval.requested", &first).await;

    // B's (and A's) LISTEN connections are cut; a card made right then still reaches B.
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    let cut: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
         AND query ILIKE 'LISTEN%' AND pid <> pg_backend_pid()",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert!(cut.len() >= 2, "both servers listen: {cut:?}");
    for pid in &cut {
        sqlx::query("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .execute(&mut admin)
            .await
            .unwrap();
    }
    let (_, second) = a
        .client()
        .post(
            "/api/chat",
            Some(&token),
            json!({"message": "trash the newsletter emails"}),
        )
        .await;
    let second = second["approval_id"].as_str().unwrap().to_string();
    arrives(&mut on_b, "approval.requested", &second).await;
    // And the other way: answered on B, seen on A.
    let mut on_a = events(&a.url, &token).await;
    let (s, _) = b
        .client()
        .post(
            &format!("/governance/approvals/{second}/respond"),
            Some(&token),
            json!({"decision": "reject"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    arrives(&mut on_a, "approval.responded", &second).await;
    drop((a, b));
}

/// A promotion whose subject carries a code only it has (`x017x`), so one search finds it.
fn offer(maildir: &std::path::Path, n: usize) {
    let code = format!("x{n:03}x");
    let text = format!(
        "From: Northwind Deals <deals@northwind.example>\r\nTo: owner@example.org\r\n\
         Subject: Offer {code}\r\nDate: {}\r\nMessage-ID: <offer-{n}@northwind.example>\r\n\
         List-Unsubscribe: <mailto:unsub@northwind.example>\r\n\r\nBuy now.\r\n",
        chrono::Utc::now().to_rfc2822()
    );
    std::fs::write(
        maildir.join(format!("cur/17000{n:05}.M{n}P1.host:2,S")),
        text,
    )
    .unwrap();
}

/// The three servers, one of which the chaos task kills and starts again.
struct Fleet {
    world: World,
    servers: Vec<Mutex<Option<Iris>>>,
}

impl Fleet {
    /// The address of server `i`, if it runs.
    async fn url(&self, i: usize) -> Option<String> {
        self.servers[i].lock().await.as_ref().map(|s| s.url.clone())
    }

    /// POSTs `body` to `path` on server `start`, or the next one that answers.
    async fn post(
        &self,
        start: usize,
        path: &str,
        token: &str,
        body: &Value,
    ) -> (StatusCode, Value) {
        let http = reqwest::Client::new();
        for attempt in 0..60 {
            let i = (start + attempt) % self.servers.len();
            let Some(url) = self.url(i).await else {
                continue;
            };
            match http
                .post(format!("{url}{path}"))
                .bearer_auth(token)
                .json(body)
                .timeout(Duration::from_secs(20))
                .send()
                .await
            {
                Ok(r) => {
                    let status = r.status();
                    if status.is_server_error() {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                    return (status, r.json().await.unwrap_or(Value::Null));
                }
                // The server died under the request: try another (an answer that landed
                // before the crash is then "already decided").
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        panic!("no server answered {path}");
    }
}

// Needs a process: several servers on one database, one killed with SIGKILL again and again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_servers_answer_200_cards_while_one_is_killed_again_and_again() {
    const CARDS: usize = 200;
    let (url, _database) = iris_store::testing::fresh_postgres_database().await;
    let model = ModelServer::start(&support::scripts::offer_trash()).await;
    let mut world = World::new(&model.base_url);
    world.database_url = url.clone();
    world.env = vec![
        ("IRIS_LEASE_SECS".into(), "2".into()),
        ("IRIS_SWEEP_SECS".into(), "1".into()),
        ("IRIS_MAIL_SYNC_SECS".into(), "0".into()),
    ];
    for n in 0..CARDS {
        offer(&world.maildir, n);
    }
    let before: Vec<Vec<u8>> = {
        let mut all: Vec<Vec<u8>> = snapshot(&world.maildir).into_values().collect();
        all.sort();
        all
    };
    let token = world.add_device("phone", "control");
    let servers = (0..3).map(|_| Mutex::new(Some(world.start()))).collect();
    let fleet = Arc::new(Fleet { world, servers });

    // 1. The cards, requested through any server.
    let mut cards = Vec::new();
    for n in 0..CARDS {
        let (s, halted) = fleet
            .post(
                n % 3,
                "/api/chat",
                &token,
                &json!({"message": format!("trash offer x{n:03}x")}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{halted}");
        assert_eq!(halted["status"], "awaiting_approval", "{halted}");
        cards.push((
            halted["approval_id"].as_str().unwrap().to_string(),
            halted["conversation_id"].as_str().unwrap().to_string(),
        ));
    }

    // 2. Chaos: every 0.5-1.5 s one server is killed and started again, until the answers are
    //    in and at least five kills happened.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let kills = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let chaos = {
        let (fleet, stop, kills) = (fleet.clone(), stop.clone(), kills.clone());
        tokio::spawn(async move {
            let mut seed = 7u64;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                tokio::time::sleep(Duration::from_millis(500 + (seed >> 33) % 1000)).await;
                let i = (seed >> 40) as usize % 3;
                let mut slot = fleet.servers[i].lock().await;
                if let Some(server) = slot.take() {
                    server.kill();
                    kills.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                *slot = Some(fleet.world.start());
            }
        })
    };

    // 3. The answers, at random, through any server, four at a time.
    let mut decisions = BTreeMap::new();
    let mut seed = 11u64;
    for chunk in cards.chunks(4) {
        let mut answers = Vec::new();
        for (id, _) in chunk {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let approve = (seed >> 33) % 10 < 7;
            let start = (seed >> 45) as usize % 3;
            decisions.insert(id.clone(), approve);
            let (fleet, token, id) = (fleet.clone(), token.clone(), id.clone());
            answers.push(tokio::spawn(async move {
                let decision = if approve { "approve" } else { "reject" };
                let (s, body) = fleet
                    .post(
                        start,
                        &format!("/governance/approvals/{id}/respond"),
                        &token,
                        &json!({"decision": decision}),
                    )
                    .await;
                // 409: an attempt on a server that then died had already landed.
                assert!(
                    s == StatusCode::OK || s == StatusCode::CONFLICT,
                    "{s}: {body}"
                );
                if s == StatusCode::CONFLICT {
                    assert_eq!(body["approval"]["responded_by"], "phone", "{body}");
                }
            }));
        }
        for a in answers {
            a.await.unwrap();
        }
    }
    // The jobs run while the chaos goes on.
    while kills.load(std::sync::atomic::Ordering::SeqCst) < 5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    chaos.await.unwrap();
    let kills = kills.load(std::sync::atomic::Ordering::SeqCst);

    // 4. Every job ends: no decided row stays unexplained.
    let mut db = sqlx::PgConnection::connect(&url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let open: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM resume_jobs WHERE state NOT IN ('done')")
                .fetch_one(&mut db)
                .await
                .unwrap();
        let jobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM resume_jobs")
            .fetch_one(&mut db)
            .await
            .unwrap();
        if open == 0 && jobs == CARDS as i64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{open} of {jobs} jobs still open after the chaos"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // 5. At most once, nothing rejected, every run resumed once, nothing lost.
    let files = snapshot(&fleet.world.maildir);
    let in_trash: Vec<String> = files
        .iter()
        .filter(|(k, _)| k.starts_with(".Trash/"))
        .map(|(_, v)| String::from_utf8_lossy(v).to_string())
        .collect();
    let mut after: Vec<Vec<u8>> = files.into_values().collect();
    after.sort();
    assert_eq!(after, before, "a message was lost or duplicated");
    let url0 = fleet.url(0).await.unwrap();
    let client = support::Client {
        http: reqwest::Client::new(),
        url: url0,
    };
    let (mut executed, mut unknown) = (0, 0);
    for (n, (id, conversation)) in cards.iter().enumerate() {
        let row = client
            .get(&format!("/governance/approvals/{id}"), &token)
            .await;
        let code = format!("x{n:03}x");
        let moved = in_trash.iter().filter(|m| m.contains(&code)).count();
        let lines = client
            .get(&format!("/api/conversations/{conversation}"), &token)
            .await["lines"]
            .as_array()
            .unwrap()
            .clone();
        // IRIS's own line at the card's end (told once), then the model's reply.
        let said: Vec<&str> = lines
            .iter()
            .skip(2)
            .filter(|l| l["role"] == "assistant")
            .filter_map(|l| l["text"].as_str())
            .collect();
        let is_end = |t: &&str| {
            t.starts_with("I can't tell whether")
                || t.starts_with("Approved \"")
                || t.starts_with("Rejected \"")
        };
        let ends = said.iter().filter(|t| is_end(t)).count();
        assert_eq!(ends, 1, "card {n} told its end {ends} times: {lines:?}");
        let replies: Vec<&str> = said.iter().copied().filter(|t| !is_end(t)).collect();
        assert_eq!(
            replies.len(),
            1,
            "card {n} resumed {} times: {lines:?}",
            replies.len()
        );
        if decisions[id] {
            assert_eq!(row["status"], "approved", "{row}");
            match row["execution"].as_str().unwrap() {
                "executed" => {
                    executed += 1;
                    assert_eq!(moved, 1, "card {n} executed but moved {moved}");
                    assert!(replies[0].starts_with("Done: moved 1"), "{replies:?}");
                }
                "unknown" => {
                    unknown += 1;
                    assert!(moved <= 1, "card {n} moved {moved} times");
                    assert!(
                        lines.iter().any(|l| l["text"]
                            .as_str()
                            .unwrap_or_default()
                            .contains("It will not be run again")),
                        "card {n}: the owner was not told: {lines:?}"
                    );
                }
                other => panic!("card {n}: execution {other} after the chaos: {row}"),
            }
        } else {
            assert_eq!(row["status"], "rejected", "{row}");
            assert_eq!(row["execution"], "none", "{row}");
            assert_eq!(moved, 0, "a rejected card {n} ran");
            assert_eq!(replies[0], "OK, I left it alone.");
        }
    }
    let approved = decisions.values().filter(|a| **a).count();
    assert_eq!(executed + unknown, approved);
    eprintln!(
        "{CARDS} cards, {approved} approved: {executed} executed, {unknown} unknown, {kills} kills"
    );
}

// Needs a process: `iris serve`'s exit at start-up (a second server on one SQLite file).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_one_sqlite_file_refuses_to_start() {
    let model = ModelServer::start(CATEGORY_TRASH_SCRIPT).await;
    let world = World::new(&model.base_url);
    let _first = world.start();
    let output = std::process::Command::new(support::iris_bin())
        .arg("serve")
        .current_dir(world.dir.path())
        .env("IRIS_DATABASE_URL", &world.database_url)
        .env("IRIS_MAILDIR", &world.maildir)
        .env("IRIS_MODEL", &world.model)
        .env("IRIS_BIND", "127.0.0.1:0")
        .env("IRIS_CONFIG", world.dir.path().join("iris.toml"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already running"), "{stderr}");
    assert!(stderr.contains("use PostgreSQL"), "{stderr}");
    // The CLI's database commands are not servers: they still work beside it.
    world.add_device("tablet", "read");
}
