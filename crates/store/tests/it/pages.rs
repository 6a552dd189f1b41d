//! Pages of approvals on both engines: newest first by (created_at, id), a cursor that gives
//! every row exactly once while new rows arrive, and each filter (status, tool, surface, time,
//! the card's text).

use crate::common;

use common::*;
use iris_core::ports::{
    ApprovalPage, ApprovalQuery, PageCursor, PageLimit, SearchText, StatusFilter,
};

/// A request for `id` created `minutes` after t0, for `tool`, whose card's lines name `subject`.
fn row_at(id: &str, minutes: i64, tool: &str, subject: &str) -> NewApproval {
    let mut row = trash_request(id, &[id]);
    row.tool = tool.to_owned();
    row.args_canonical = canonical_json(&row.args);
    row.call_hash = call_hash(tool, &row.args);
    row.card.lines = vec![format!("{subject} — shop@example.com")];
    row.card.request = "clean up the mailbox".to_owned();
    row.created_at = t0() + Duration::minutes(minutes);
    row.expires_at = row.created_at + Duration::hours(1);
    row
}

async fn page(store: &Store, query: &ApprovalQuery) -> ApprovalPage {
    store.approval_page(query).await.expect("page")
}

fn ids(page: &ApprovalPage) -> Vec<String> {
    page.approvals.iter().map(|a| a.id.clone()).collect()
}

async fn paging_gives_every_row_once_newest_first_while_rows_arrive(engine: Engine) {
    let db = engine.open().await;
    // 23 rows; three share one creation time, so the id breaks the tie.
    let mut expected = Vec::new();
    for i in 0..23 {
        let minutes = if (10..13).contains(&i) { 10 } else { i };
        let id = format!("row-{i:02}");
        insert(&db.store, &row_at(&id, minutes, "trash_email", "Promo"))
            .await
            .expect("insert");
        expected.push((minutes, id));
    }
    expected.sort();
    expected.reverse();
    let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();

    let mut seen = Vec::new();
    let mut query = ApprovalQuery {
        limit: PageLimit::parse("5").unwrap(),
        ..ApprovalQuery::default()
    };
    let mut arrivals = 0;
    loop {
        let got = page(&db.store, &query).await;
        assert!(got.approvals.len() <= 5);
        seen.extend(ids(&got));
        // A new card arrives between every two pages: it is newer than every listed row.
        arrivals += 1;
        insert(
            &db.store,
            &row_at(
                &format!("new-{arrivals}"),
                100 + arrivals,
                "trash_email",
                "Promo",
            ),
        )
        .await
        .expect("insert");
        match got.next {
            Some(cursor) => {
                // The cursor travels as opaque text and reads back the same.
                let text = cursor.as_text();
                query.before = Some(PageCursor::parse(&text).expect("own cursor"));
            }
            None => break,
        }
    }
    assert_eq!(seen, expected, "every row once, newest first");

    // A first page now starts with the arrivals, newest first.
    let first = page(&db.store, &ApprovalQuery::default()).await;
    assert_eq!(first.approvals[0].id, format!("new-{arrivals}"));
    assert_eq!(first.approvals.len(), 23 + arrivals as usize);
    assert!(first.next.is_none(), "50 rows fit the default page");
}

async fn each_filter_narrows_the_page(engine: Engine) {
    let db = engine.open().await;
    let s = &db.store;
    insert(s, &row_at("a", 1, "trash_email", "Weekly PROMO 50%_off"))
        .await
        .unwrap();
    insert(s, &row_at("b", 2, "send_email", "Lunch on Friday"))
        .await
        .unwrap();
    insert(s, &row_at("c", 3, "trash_email", "Invoice 42"))
        .await
        .unwrap();
    insert(s, &row_at("d", 4, "trash_email", "Newsletter"))
        .await
        .unwrap();
    let at = t0() + Duration::minutes(10);
    let mut by_telegram = response(ApprovalStatus::Approved, "owner", at);
    by_telegram.surface = "telegram".into();
    assert!(decide(s, "a", &by_telegram).await.unwrap());
    assert!(
        decide(s, "b", &response(ApprovalStatus::Rejected, "owner", at))
            .await
            .unwrap()
    );

    let q = |f: fn(&mut ApprovalQuery)| {
        let mut query = ApprovalQuery::default();
        f(&mut query);
        query
    };
    let cases: Vec<(ApprovalQuery, Vec<&str>)> = vec![
        (ApprovalQuery::default(), vec!["d", "c", "b", "a"]),
        (q(|q| q.status = StatusFilter::Answered), vec!["b", "a"]),
        (
            q(|q| q.status = StatusFilter::Is(ApprovalStatus::Pending)),
            vec!["d", "c"],
        ),
        (q(|q| q.tool = Some("send_email".into())), vec!["b"]),
        (q(|q| q.surface = Some("telegram".into())), vec!["a"]),
        (q(|q| q.surface = Some("web".into())), vec!["b"]),
        (
            q(|q| q.since = Some(t0() + Duration::minutes(2))),
            vec!["d", "c", "b"],
        ),
        (
            q(|q| q.until = Some(t0() + Duration::minutes(2))),
            vec!["a"],
        ),
        // The search: case does not matter, three characters or more (the index) and fewer.
        (
            q(|q| q.text = SearchText::parse("promo").unwrap()),
            vec!["a"],
        ),
        (
            q(|q| q.text = SearchText::parse("LUNCH ON").unwrap()),
            vec!["b"],
        ),
        (q(|q| q.text = SearchText::parse("42").unwrap()), vec!["c"]),
        // Wildcards are literal.
        (
            q(|q| q.text = SearchText::parse("50%_").unwrap()),
            vec!["a"],
        ),
        (q(|q| q.text = SearchText::parse("%").unwrap()), vec!["a"]),
        (
            q(|q| q.text = SearchText::parse("\"quoted\"").unwrap()),
            vec![],
        ),
        // The owner's request is part of the card's text.
        (
            q(|q| q.text = SearchText::parse("the mailbox").unwrap()),
            vec!["d", "c", "b", "a"],
        ),
        (
            q(|q| {
                q.tool = Some("trash_email".into());
                q.status = StatusFilter::Is(ApprovalStatus::Pending);
                q.text = SearchText::parse("news").unwrap();
            }),
            vec!["d"],
        ),
    ];
    for (query, want) in cases {
        assert_eq!(ids(&page(s, &query).await), want, "{query:?}");
    }
}

async fn the_search_text_is_written_with_the_row_and_never_changes(engine: Engine) {
    let db = engine.open().await;
    insert(&db.store, &row_at("a", 1, "trash_email", "Weekly PROMO"))
        .await
        .unwrap();
    let text = raw_column(&db.store, "a", "card_text").await.unwrap();
    assert!(text.contains("weekly promo"), "{text}");
    let refusal = refused(
        &db.store,
        "UPDATE approvals SET card_text = 'x' WHERE id = 'a'",
    )
    .await;
    assert!(refusal.contains("immutable"), "{refusal}");
}

async fn an_agent_reads_only_the_rows_it_requested(engine: Engine) {
    let db = engine.open().await;
    pair_agent(&db.store, "claude-desktop").await;
    pair_agent(&db.store, "cursor").await;
    let mut mine = row_at("a", 1, "write_file", "notes/plan.md");
    mine.requested_by = Some("claude-desktop".into());
    let mut theirs = row_at("b", 2, "write_file", "notes/other.md");
    theirs.requested_by = Some("cursor".into());
    let owners = row_at("c", 3, "trash_email", "Weekly promo");
    for row in [&mine, &theirs, &owners] {
        insert(&db.store, row).await.unwrap();
    }
    let agent = ApprovalQuery {
        requested_by: Some("claude-desktop".into()),
        ..ApprovalQuery::default()
    };
    let listed = page(&db.store, &agent).await;
    assert_eq!(ids(&listed), vec!["a"]);
    assert_eq!(
        listed.approvals[0].requested_by.as_deref(),
        Some("claude-desktop")
    );
    assert_eq!(
        ids(&page(&db.store, &ApprovalQuery::default()).await),
        vec!["c", "b", "a"]
    );
    let refusal = refused(
        &db.store,
        "UPDATE approvals SET requested_by = 'claude-desktop' WHERE id = 'b'",
    )
    .await;
    assert!(refusal.contains("immutable"), "{refusal}");
    let refusal = refused(
        &db.store,
        "UPDATE approvals SET requested_by_device = NULL WHERE id = 'a'",
    )
    .await;
    assert!(refusal.contains("immutable"), "{refusal}");

    // Revoked: its pending row is the sweep's to reject, and a device paired again under the
    // same name is another device, with none of its rows (docs/liveness.md "revoked devices").
    assert!(db.store.revoked_requests().await.unwrap().is_empty());
    assert!(DeviceStore::revoke(&db.store, "claude-desktop")
        .await
        .unwrap());
    assert_eq!(db.store.revoked_requests().await.unwrap(), vec!["a"]);
    pair_agent(&db.store, "claude-desktop").await;
    assert!(ids(&page(&db.store, &agent).await).is_empty());
    assert_eq!(db.store.revoked_requests().await.unwrap(), vec!["a"]);
}

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn an_agent_reads_only_the_rows_it_requested() {
            super::an_agent_reads_only_the_rows_it_requested($engine).await;
        }
        #[tokio::test]
        async fn paging_gives_every_row_once_newest_first_while_rows_arrive() {
            super::paging_gives_every_row_once_newest_first_while_rows_arrive($engine).await;
        }
        #[tokio::test]
        async fn the_search_text_is_written_with_the_row_and_never_changes() {
            super::the_search_text_is_written_with_the_row_and_never_changes($engine).await;
        }
        #[tokio::test]
        async fn each_filter_narrows_the_page() {
            super::each_filter_narrows_the_page($engine).await;
        }
    };
}

mod sqlite {
    use super::*;
    suite!(Engine::Sqlite);
}

mod postgres {
    use super::*;
    suite!(Engine::Postgres);
}
