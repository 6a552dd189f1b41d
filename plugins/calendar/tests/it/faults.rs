//! CalDAV faults through a small proxy of our own on loopback, in front of a real Radicale: a
//! `DELETE` whose answer is lost after the server ran it (the connection dropped, or no answer
//! before the deadline) is followed by one `GET` and never sent again; one dropped before the
//! server saw it is found still there by that `GET` and is "failed, not deleted"; when the `GET`
//! fails too, the line is `unknown` and its kept copy stays; a `DELETE` the server answers with
//! 500 is "failed" for that line and the event stays.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iris_calendar::backend::{CaldavBackend, CaldavSettings};
use iris_calendar::CalendarPlugin;
use iris_core::plugin::{CallContext, Plugin};
use iris_store::Store;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::servers::radicale;

const EVENT: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:dentist-1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART:20261208T100000Z\r\nDTEND:20261208T110000Z\r\nSUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

/// What the proxy does to a `DELETE`; every other request passes through.
#[derive(Clone, Copy)]
enum Fault {
    /// Forwarded; the server's answer is read and thrown away, the client's connection closed.
    DropAnswer,
    /// Forwarded; the server's answer is held back past the client's deadline.
    HoldAnswer,
    /// Not forwarded: the proxy answers 500.
    ServerError,
    /// Not forwarded: the client's connection is closed before the server sees the request.
    DropBeforeServer,
    /// Forwarded and its answer dropped, and every later request's connection dropped too (the
    /// look after the lost answer cannot tell).
    DropEverythingAfter,
}

/// Reads one HTTP/1.1 request (head and a `Content-Length` body) from `client`.
async fn read_request(client: &mut TcpStream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(buf)
}

/// The request with `Connection: close`, so the server ends its answer by closing.
fn closing(request: &[u8]) -> Vec<u8> {
    let at = request.windows(2).position(|w| w == b"\r\n").unwrap_or(0) + 2;
    let mut out = request[..at].to_vec();
    out.extend_from_slice(b"Connection: close\r\n");
    out.extend_from_slice(&request[at..]);
    out
}

async fn forward(upstream: u16, request: &[u8]) -> Vec<u8> {
    let mut server = TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
    server.write_all(&closing(request)).await.unwrap();
    let mut answer = Vec::new();
    server.read_to_end(&mut answer).await.unwrap();
    answer
}

/// A proxy on a free loopback port in front of `upstream`; counts the `DELETE`s it saw.
async fn proxy(upstream: u16, fault: Fault) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let deletes = Arc::new(AtomicUsize::new(0));
    let seen = deletes.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut client, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            tokio::spawn(async move {
                // One request per connection: the answer ends with the connection.
                let Some(request) = read_request(&mut client).await else {
                    return;
                };
                if !request.starts_with(b"DELETE ") {
                    if matches!(fault, Fault::DropEverythingAfter)
                        && seen.load(Ordering::SeqCst) > 0
                    {
                        drop(client);
                        return;
                    }
                    let answer = forward(upstream, &request).await;
                    let _ = client.write_all(&answer).await;
                    return;
                }
                seen.fetch_add(1, Ordering::SeqCst);
                match fault {
                    Fault::DropAnswer => {
                        forward(upstream, &request).await;
                        drop(client);
                    }
                    Fault::HoldAnswer => {
                        forward(upstream, &request).await;
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        drop(client);
                    }
                    Fault::DropBeforeServer => drop(client),
                    Fault::DropEverythingAfter => {
                        forward(upstream, &request).await;
                        drop(client);
                    }
                    Fault::ServerError => {
                        let _ = client
                            .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .await;
                    }
                }
            });
        }
    });
    (port, deletes)
}

fn ctx(run: &str) -> CallContext {
    CallContext {
        run_id: run.into(),
        conversation_id: "c1".into(),
        request: "delete the dentist".into(),
    }
}

/// Deletes the one event through the proxy as the core would (card, check, run) and returns
/// the item's outcome status, how many DELETEs reached the proxy, and whether the event is still
/// on the server.
async fn delete_through(fault: Fault) -> (String, usize, bool) {
    let (status, deletes, still_there, _) = delete_and_keep(fault).await;
    (status, deletes, still_there)
}

/// As [`delete_through`], with the state of the event's kept copy (`None`: no row).
async fn delete_and_keep(fault: Fault) -> (String, usize, bool, Option<String>) {
    let server = radicale().await;
    server.put("dentist.ics", EVENT).await;
    let upstream: u16 = server
        .home
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (port, deletes) = proxy(upstream, fault).await;
    let backend = CaldavBackend::open(
        "personal",
        CaldavSettings {
            url: format!("http://127.0.0.1:{port}/alice/"),
            username: Some("alice".into()),
            password: Some("secret".into()),
        },
    )
    .unwrap()
    .with_timeout(Duration::from_secs(2))
    .unwrap();
    let store = Store::connect("sqlite::memory:").await.unwrap();
    let plugin = CalendarPlugin::with_backends(vec![Arc::new(backend)], &store).unwrap();
    let listed = plugin
        .execute(
            "list_events",
            &json!({"from": "2026-12-01", "to": "2026-12-31"}),
            &ctx("r0"),
        )
        .await
        .unwrap();
    let id = listed.result["events"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let args = json!({"ids": [id]});
    let card = plugin
        .describe("delete_events", &args, &ctx("r1"))
        .await
        .unwrap();
    assert!(
        plugin
            .check_precondition("delete_events", &id, &card.preconditions[0], &ctx("r1"))
            .await
    );
    let out = plugin
        .execute_held("delete_events", &args, &[], &ctx("r1"), None)
        .await
        .unwrap();
    let status = out.items[0].outcome["status"].as_str().unwrap().to_string();
    let still_there = server.get("dentist.ics").await.is_some();
    let kept = plugin
        .kept()
        .newest_of(&id)
        .await
        .unwrap()
        .map(|row| row.state);
    (status, deletes.load(Ordering::SeqCst), still_there, kept)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_answer_is_looked_up_once_and_never_sent_again() {
    let (status, deletes, still_there) = delete_through(Fault::DropAnswer).await;
    assert_eq!(
        status, "deleted",
        "the GET after the lost answer found it gone"
    );
    assert_eq!(deletes, 1, "never a second DELETE");
    assert!(!still_there);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_past_the_deadline_is_looked_up_once_and_never_sent_again() {
    let (status, deletes, still_there) = delete_through(Fault::HoldAnswer).await;
    assert_eq!(status, "deleted");
    assert_eq!(deletes, 1, "never a second DELETE");
    assert!(!still_there);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_failed_for_that_line_and_the_event_stays() {
    let (status, deletes, still_there) = delete_through(Fault::ServerError).await;
    assert_eq!(status, "failed");
    assert_eq!(deletes, 1);
    assert!(still_there);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_dropped_before_the_server_saw_it_is_found_still_there_and_not_sent_again() {
    let (status, deletes, still_there, kept) = delete_and_keep(Fault::DropBeforeServer).await;
    assert_eq!(
        status, "failed",
        "the look found the same version: not deleted"
    );
    assert_eq!(deletes, 1, "never a second DELETE");
    assert!(still_there);
    assert_eq!(kept, None, "nothing was taken, so nothing is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_answer_whose_look_fails_too_is_unknown_and_its_copy_is_kept() {
    let (status, deletes, still_there, kept) = delete_and_keep(Fault::DropEverythingAfter).await;
    assert_eq!(status, "unknown");
    assert_eq!(deletes, 1, "never a second DELETE");
    assert!(!still_there, "the server did delete it");
    assert_eq!(
        kept.as_deref(),
        Some("deleting"),
        "the kept copy stays, so it can be put back"
    );
}
