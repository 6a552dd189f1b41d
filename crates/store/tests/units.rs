//! The lifecycle's units of work on both engines (DESIGN §9): each phase is one transaction,
//! whole or not at all; a decided row is a durable resume job claimed under a lease; every write
//! under a lease is fenced by its epoch; lease and expiry comparisons read the store's one time
//! source (here a clock the test moves, bound as a parameter). Each body runs as `sqlite::NAME`
//! and `postgres::NAME`.

mod common;

use common::*;
use iris_core::ports::{
    ClaimPlan, ClaimedJob, JobEnd, JobFinish, JobOrigin, JobPick, JobSnapshot, Lease, LedgerStep,
    Outcome, OutcomeRecord, SavedRun,
};
use iris_core::wire::Event;

const LEASE: u32 = 30;

/// Claims `pick` for `owner` with `plan`, as the service does.
async fn claim(
    store: &Store,
    pick: JobPick<'_>,
    owner: &str,
    plan: impl Fn(&JobSnapshot) -> ClaimPlan + Send + Sync,
) -> Option<ClaimedJob> {
    store
        .claim_job(pick, owner, LEASE, &[], &plan)
        .await
        .expect("claim")
}

/// The plan that claims the approved call of the snapshot's row.
fn claim_call(snapshot: &JobSnapshot) -> ClaimPlan {
    let row = snapshot.approval.as_ref().expect("row");
    ClaimPlan {
        ledger: LedgerStep::Claim {
            tool: row.tool.clone(),
            args_canonical: canonical_json(&row.args),
        },
        ..ClaimPlan::lease_only()
    }
}

fn lease_only(_: &JobSnapshot) -> ClaimPlan {
    ClaimPlan::lease_only()
}

fn outcome() -> OutcomeRecord {
    OutcomeRecord {
        outcome: Outcome::Executed,
        result: json!({"status": "trashed", "trashed": 2}),
        audit: vec![NewAuditEntry {
            approval_id: "a1".to_owned(),
            kind: AuditKind::Execution,
            item: Some("m1".to_owned()),
            result: json!({"status": "trashed"}),
            undo_available: true,
            actor: "iris".to_owned(),
            surface: None,
            at: t0(),
        }],
        events: Vec::new(),
    }
}

fn done() -> JobFinish {
    JobFinish {
        turn: None,
        end: JobEnd::Done,
        resume_error: None,
        resume_error_changed: false,
        events: Vec::new(),
    }
}

async fn job_state(store: &Store, id: &str) -> Option<(String, i64)> {
    sqlx::query_as::<_, (String, i64)>(
        "SELECT state, lease_epoch FROM resume_jobs WHERE approval_id = $1",
    )
    .bind(id)
    .fetch_optional(store.pool())
    .await
    .expect("read job")
}

async fn count(store: &Store, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql)
        .fetch_one(store.pool())
        .await
        .expect("count")
}

// ---------------------------------------------------------------------------------------------
// Halt: one commit, whole or nothing.
// ---------------------------------------------------------------------------------------------

async fn a_halt_writes_row_checkpoint_link_transcript_and_lines_in_one_commit(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    let row = trash_request("a1", &["m1", "m2"]);
    let line = |text: &str| ChatLine {
        role: "assistant".into(),
        text: text.into(),
        approval_id: Some("a1".into()),
        approval_status: None,
    };
    let turn = TurnCommit {
        conversation_id: "c1".into(),
        transcript: checkpoint("a1").messages,
        transcript_version: 0,
        lines: vec![line("asked"), line("waiting")],
        actions: Vec::new(),
        halt: Some(HaltRecord {
            approval: row.clone(),
            checkpoint: checkpoint("a1"),
        }),
        events: vec![Event::ApprovalRequested(row.pending_view())],
    };
    let mut events = store.subscribe();
    store.commit_turn(&turn).await.expect("halt");
    let stored = store.approval("a1").await.unwrap().expect("row");
    assert_eq!(stored.status, ApprovalStatus::Pending);
    assert_eq!(stored.items, row.items);
    assert_eq!(
        raw_column(&store, "a1", "checkpoint_id").await.as_deref(),
        Some("cp-a1")
    );
    assert_eq!(
        store.transcript("c1").await.unwrap().messages,
        turn.transcript
    );
    let lines = store.lines("c1").await.unwrap();
    assert_eq!(lines.len(), 2);
    // Each line says its card's status as the store reads it (the app's amber halt line).
    assert!(
        lines
            .iter()
            .all(|l| l.approval_status == Some(ApprovalStatus::Pending)),
        "{lines:?}"
    );
    if engine == Engine::Sqlite {
        // PostgreSQL delivers through its listener (tested with servers in the server suite).
        match events.try_recv() {
            Ok(Event::ApprovalRequested(a)) => assert_eq!(a.id, "a1"),
            other => panic!("expected approval.requested, got {other:?}"),
        }
    }

    // A halt that cannot be whole writes nothing: a checkpoint of another row, a row whose
    // hash does not cover its arguments.
    let mut broken = turn.clone();
    broken.conversation_id = "c2".into();
    let mut other = trash_request("a2", &["m1"]);
    broken.halt = Some(HaltRecord {
        approval: other.clone(),
        checkpoint: checkpoint("a1"),
    });
    assert!(store.commit_turn(&broken).await.is_err());
    other.call_hash = call_hash("restore_email", &other.args);
    broken.halt = Some(HaltRecord {
        approval: other,
        checkpoint: checkpoint("a2"),
    });
    assert!(store.commit_turn(&broken).await.is_err());
    assert!(store.approval("a2").await.unwrap().is_none());
    assert!(store.transcript("c2").await.unwrap().messages.is_empty());
    assert!(store.lines("c2").await.unwrap().is_empty());
    if engine == Engine::Sqlite {
        assert!(
            events.try_recv().is_err(),
            "a failed commit published nothing"
        );
    }
    // The database refuses a second checkpoint link even outside the store's API.
    let message = refused(
        &store,
        "UPDATE approvals SET checkpoint_id = 'cp-other' WHERE id = 'a1'",
    )
    .await;
    assert!(
        message.contains("linked to its checkpoint once"),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------------
// Decisions: compare-and-set from pending, against the store's clock; each makes a job.
// ---------------------------------------------------------------------------------------------

async fn a_decision_makes_one_job_and_the_store_clock_decides_lapses(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("a1", &["m1"])).await.unwrap();
    insert(&store, &trash_request("a2", &["m2"])).await.unwrap();
    assert_eq!(
        job_state(&store, "a1").await,
        None,
        "a pending row has no job"
    );
    let answer = response(ApprovalStatus::Rejected, "cli", t0() + Duration::minutes(5));
    assert!(decide(&store, "a1", &answer).await.unwrap());
    assert_eq!(job_state(&store, "a1").await, Some(("ready".into(), 0)));
    assert!(
        !decide(&store, "a1", &answer).await.unwrap(),
        "answered once"
    );
    assert_eq!(
        store.audit(Some("a1")).await.unwrap().len(),
        1,
        "the losing answer wrote nothing"
    );

    // The store's clock, not the answer's stamp, says whether a row lapsed.
    let expiry = t0() + Duration::hours(1);
    db.clock.set(expiry - Duration::nanoseconds(1));
    assert!(store.lapsed().await.unwrap().is_empty());
    let expire = response(ApprovalStatus::Expired, "iris", expiry);
    assert!(
        !decide(&store, "a2", &expire).await.unwrap(),
        "not lapsed yet"
    );
    db.clock.set(expiry);
    assert_eq!(store.lapsed().await.unwrap(), ["a2"]);
    let approve = response(ApprovalStatus::Approved, "web", t0());
    assert!(!decide(&store, "a2", &approve).await.unwrap(), "lapsed");
    assert!(decide(&store, "a2", &expire).await.unwrap());
    assert_eq!(
        store.approval("a2").await.unwrap().unwrap().status,
        ApprovalStatus::Expired
    );
    assert_eq!(job_state(&store, "a2").await, Some(("ready".into(), 0)));
    assert!(store.lapsed().await.unwrap().is_empty());
    assert!(matches!(
        decide(&store, "missing", &answer).await,
        Err(StoreError::NotFound(_))
    ));
}

async fn a_job_exists_only_for_a_decided_row_and_is_never_deleted(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("p", &["m1"])).await.unwrap();
    let message = refused(
        &store,
        "INSERT INTO resume_jobs (approval_id, state, lease_epoch, created_at, updated_at) \
         VALUES ('p', 'ready', 0, 'x', 'x')",
    )
    .await;
    assert!(message.contains("only for a decided approval"), "{message}");
    approved(&store, "a1").await;
    let message = refused(&store, "DELETE FROM resume_jobs").await;
    assert!(message.contains("never deleted"), "{message}");
    let message = refused(&store, "UPDATE resume_jobs SET lease_epoch = -1").await;
    assert!(message.contains("only grows"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// Jobs: a lease, kept by heartbeats, fenced by its epoch, taken over when it lapses.
// ---------------------------------------------------------------------------------------------

async fn a_lapsed_lease_is_taken_over_and_the_old_holder_writes_nothing(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;

    // Server A claims the job and the call (write-ahead: `executing`).
    let a = claim(&store, JobPick::Next, "server-a", claim_call)
        .await
        .expect("a claims");
    assert_eq!(a.lease.epoch, 1);
    assert_eq!(a.snapshot.origin, JobOrigin::Fresh);
    assert!(matches!(a.snapshot.saved, SavedRun::Saved(_)));
    assert_eq!(a.snapshot.preconditions.as_ref().unwrap().len(), 2);
    assert_eq!(
        store.approval("a1").await.unwrap().unwrap().execution,
        Execution::Executing
    );
    // Held: nobody else can claim it, not even for this approval.
    assert!(claim(&store, JobPick::Next, "server-b", lease_only)
        .await
        .is_none());
    assert!(
        claim(&store, JobPick::Approval("a1"), "server-b", lease_only)
            .await
            .is_none()
    );
    // A heartbeat keeps it past its first end.
    db.clock.advance(Duration::seconds(i64::from(LEASE) - 1));
    assert!(store.heartbeat(&a.lease, LEASE).await.unwrap());
    db.clock.advance(Duration::seconds(i64::from(LEASE) - 1));
    assert!(claim(&store, JobPick::Next, "server-b", lease_only)
        .await
        .is_none());

    // A stalls past its lease. A itself never takes over a job one of its own tasks still
    // holds (a live server must not call its own running call interrupted)...
    db.clock.advance(Duration::seconds(2));
    let busy = [a.lease.owner.clone()];
    for pick in [JobPick::Next, JobPick::Approval("a1")] {
        assert!(store
            .claim_job(pick, "server-a", LEASE, &busy, &lease_only)
            .await
            .unwrap()
            .is_none());
    }
    // ...B does: it finds `executing` and marks it unknown.
    let b = claim(&store, JobPick::Next, "server-b", |s| {
        assert_eq!(s.origin, JobOrigin::TakenOver);
        assert_eq!(s.approval.as_ref().unwrap().execution, Execution::Executing);
        ClaimPlan {
            ledger: LedgerStep::MarkUnknown {
                result: serde_json::json!({"status": "unknown", "message": "look in Trash"}),
            },
            ..ClaimPlan::lease_only()
        }
    })
    .await
    .expect("b takes over");
    assert_eq!(b.lease.epoch, 2);
    let taken = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(taken.execution, Execution::Unknown);
    // The card says how to check it: the takeover's result is stored with the state.
    assert_eq!(
        taken.result,
        Some(serde_json::json!({"status": "unknown", "message": "look in Trash"}))
    );

    // Every write of A's is fenced off now: heartbeat, outcome, end.
    assert!(!store.heartbeat(&a.lease, LEASE).await.unwrap());
    assert!(matches!(
        store.record_outcome(&a.lease, LEASE, &outcome()).await,
        Err(StoreError::LeaseLost(id)) if id == "a1"
    ));
    assert!(matches!(
        store.finish_job(&a.lease, &done()).await,
        Err(StoreError::LeaseLost(_))
    ));
    let row = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(
        row.execution,
        Execution::Unknown,
        "the late outcome did not land"
    );
    assert!(store
        .audit(Some("a1"))
        .await
        .unwrap()
        .iter()
        .all(|e| e.kind != AuditKind::Execution));
    // Even the current holder with an old epoch is fenced.
    let stale = Lease {
        owner: b.lease.owner.clone(),
        ..a.lease.clone()
    };
    assert!(!store.heartbeat(&stale, LEASE).await.unwrap());

    // B ends the job once; a done job is never claimed again.
    store
        .finish_job(&b.lease, &done())
        .await
        .expect("b finishes");
    assert_eq!(job_state(&store, "a1").await, Some(("done".into(), 2)));
    db.clock.advance(Duration::hours(1));
    assert!(claim(&store, JobPick::Next, "server-c", lease_only)
        .await
        .is_none());
    assert!(claim(&store, JobPick::Retry("a1"), "server-c", lease_only)
        .await
        .is_none());
    let message = refused(
        &store,
        "UPDATE resume_jobs SET state = 'ready' WHERE approval_id = 'a1'",
    )
    .await;
    assert!(message.contains("resumes exactly once"), "{message}");
}

/// How many `execution` audit entries approval `a1` has.
async fn execution_entries(store: &Store) -> usize {
    store
        .audit(Some("a1"))
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == AuditKind::Execution)
        .count()
}

async fn an_outcome_is_written_once_with_its_audit_under_the_lease(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let job = claim(&store, JobPick::Approval("a1"), "server-a", claim_call)
        .await
        .expect("claim");
    store
        .record_outcome(&job.lease, LEASE, &outcome())
        .await
        .expect("outcome");
    let row = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(row.execution, Execution::Executed);
    assert_eq!(row.result, Some(outcome().result));
    let executions = execution_entries(&store).await;
    assert_eq!(executions, 1);
    // The outcome is written once. The same outcome again under the same lease (a retry whose
    // first try landed, its answer lost) re-plans from what is stored: acknowledged, nothing
    // written again. Another outcome is refused and changes nothing.
    store
        .record_outcome(&job.lease, LEASE, &outcome())
        .await
        .expect("the same outcome, already stored, is acknowledged");
    let other = OutcomeRecord {
        outcome: Outcome::Failed,
        result: json!({"status": "failed"}),
        ..outcome()
    };
    assert!(matches!(
        store.record_outcome(&job.lease, LEASE, &other).await,
        Err(StoreError::LeaseLost(_))
    ));
    let executions_now = execution_entries(&store).await;
    assert_eq!(executions_now, 1, "nothing written again");
    assert_eq!(
        store.approval("a1").await.unwrap().unwrap().result,
        Some(outcome().result)
    );
    let message = refused(
        &store,
        "UPDATE ledger SET state = 'failed' WHERE approval_id = 'a1'",
    )
    .await;
    assert!(message.contains("written once"), "{message}");
    // The end of the job clears the lease and records the resume error, if any.
    store
        .finish_job(
            &job.lease,
            &JobFinish {
                end: JobEnd::Failed,
                resume_error: Some("the model was down".into()),
                resume_error_changed: true,
                ..done()
            },
        )
        .await
        .expect("finish");
    assert_eq!(
        store
            .approval("a1")
            .await
            .unwrap()
            .unwrap()
            .resume_error
            .as_deref(),
        Some("the model was down")
    );
    assert_eq!(job_state(&store, "a1").await, Some(("failed".into(), 1)));
    // A failed job is claimed again only for the owner's retry.
    assert!(claim(&store, JobPick::Next, "server-b", lease_only)
        .await
        .is_none());
    let retry = claim(&store, JobPick::Retry("a1"), "server-b", |s| {
        assert_eq!(s.origin, JobOrigin::Retried);
        assert_eq!(s.approval.as_ref().unwrap().execution, Execution::Executed);
        ClaimPlan {
            resume_error: Some(None),
            ..ClaimPlan::lease_only()
        }
    })
    .await
    .expect("retry");
    assert_eq!(retry.lease.epoch, 2);
    assert_eq!(
        store.approval("a1").await.unwrap().unwrap().resume_error,
        None
    );
    assert!(claim(&store, JobPick::Retry("a1"), "server-c", lease_only)
        .await
        .is_none());
}

async fn concurrent_claimers_take_each_job_once(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    for round in 0..3 {
        let ids: Vec<String> = (0..8).map(|i| format!("r{round}-{i}")).collect();
        for id in &ids {
            approved(&store, id).await;
        }
        let barrier = Arc::new(Barrier::new(12));
        let mut tasks = Vec::new();
        for worker in 0..12 {
            let (store, barrier) = (store.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let mut taken = Vec::new();
                while let Some(job) = store
                    .claim_job(
                        JobPick::Next,
                        &format!("w{worker}"),
                        LEASE,
                        &[],
                        &claim_call,
                    )
                    .await
                    .expect("claim")
                {
                    taken.push(job.lease.approval_id);
                }
                taken
            }));
        }
        let mut taken = Vec::new();
        for task in tasks {
            taken.extend(task.await.expect("task"));
        }
        taken.sort();
        let mut expected = ids.clone();
        expected.sort();
        assert_eq!(
            taken, expected,
            "round {round}: each job claimed exactly once"
        );
    }
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM ledger WHERE state = 'executing'"
        )
        .await,
        24
    );
}

async fn the_claim_reports_a_missing_or_corrupt_saved_run_and_a_corrupt_row(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    // A decided row whose run was never saved (what a halt in separate commits could leave).
    approved(&store, "src").await;
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at, preconditions) \
         SELECT 'lost', kind, tool, args, args_canonical, call_hash, items, card, run_id, \
         context_summary, created_at, expires_at, preconditions FROM approvals WHERE id = 'src'",
    )
    .await
    .unwrap();
    assert!(decide(
        &store,
        "lost",
        &response(ApprovalStatus::Approved, "web", t0())
    )
    .await
    .unwrap());
    let job = claim(&store, JobPick::Approval("lost"), "s", |s| {
        assert_eq!(s.saved, SavedRun::Missing);
        assert_eq!(s.conversation_id, None);
        ClaimPlan {
            end: Some(JobEnd::Dead),
            resume_error: Some(Some("never saved".into())),
            ..ClaimPlan::lease_only()
        }
    })
    .await
    .expect("claim");
    assert_eq!(job.plan.end, Some(JobEnd::Dead));
    assert_eq!(job_state(&store, "lost").await.unwrap().0, "dead");
    assert!(claim(&store, JobPick::Retry("lost"), "s", lease_only)
        .await
        .is_none());
    assert_eq!(
        store
            .approval("lost")
            .await
            .unwrap()
            .unwrap()
            .resume_error
            .as_deref(),
        Some("never saved")
    );

    // A checkpoint that does not parse: corrupt, its conversation still known.
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at, preconditions) \
         SELECT 'bad', kind, tool, args, args_canonical, call_hash, items, card, run_id, \
         context_summary, created_at, expires_at, preconditions FROM approvals WHERE id = 'src'",
    )
    .await
    .unwrap();
    exec(
        &store,
        "INSERT INTO checkpoints (id, approval_id, run_id, conversation_id, body, created_at) \
         VALUES ('cp-bad', 'bad', 'run-bad', 'conv-9', '{\"messages\": [', 'x')",
    )
    .await
    .unwrap();
    assert!(decide(
        &store,
        "bad",
        &response(ApprovalStatus::Approved, "web", t0())
    )
    .await
    .unwrap());
    claim(&store, JobPick::Approval("bad"), "s", |s| {
        assert!(
            matches!(&s.saved, SavedRun::Corrupt(reason) if reason.contains("body")),
            "{:?}",
            s.saved
        );
        assert_eq!(s.conversation_id.as_deref(), Some("conv-9"));
        ClaimPlan::lease_only()
    })
    .await
    .expect("claim");

    // A row that does not parse is reported, not a panic and not a skipped job.
    exec(
        &store,
        "INSERT INTO approvals (id, kind, tool, args, args_canonical, call_hash, items, card, \
         run_id, context_summary, created_at, expires_at) \
         SELECT 'garbled', kind, tool, args, args_canonical, call_hash, items, '{\"title\": ', \
         run_id, context_summary, created_at, expires_at FROM approvals WHERE id = 'src'",
    )
    .await
    .unwrap();
    // (Nobody can answer a row that does not parse: the decision reads it first. This one was
    // answered before it was damaged.)
    assert!(matches!(
        decide(
            &store,
            "garbled",
            &response(ApprovalStatus::Rejected, "web", t0())
        )
        .await,
        Err(StoreError::Corrupt { .. })
    ));
    for sql in [
        "UPDATE approvals SET status = 'rejected', responded_at = '2026-03-01T09:01:00.000000000Z', \
         responded_by = 'web', surface = 'web' WHERE id = 'garbled'",
        "INSERT INTO resume_jobs (approval_id, state, lease_epoch, created_at, updated_at) \
         VALUES ('garbled', 'ready', 0, '2026-03-01T09:01:00.000000000Z', '2026-03-01T09:01:00.000000000Z')",
    ] {
        exec(&store, sql).await.unwrap();
    }
    claim(&store, JobPick::Approval("garbled"), "s", |s| {
        assert!(
            matches!(&s.approval, Err(reason) if reason.contains("card")),
            "{:?}",
            s.approval
        );
        ClaimPlan::lease_only()
    })
    .await
    .expect("claim");
}

async fn a_refused_call_is_consumed_and_the_claim_rule_is_the_second_line(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let result = json!({"status": "failed", "message": "not run: the tool is gone"});
    claim(&store, JobPick::Approval("a1"), "s", |s| {
        let row = s.approval.as_ref().unwrap();
        ClaimPlan {
            ledger: LedgerStep::Refuse {
                tool: row.tool.clone(),
                args_canonical: canonical_json(&row.args),
                result: result.clone(),
            },
            ..ClaimPlan::lease_only()
        }
    })
    .await
    .expect("claim");
    let row = store.approval("a1").await.unwrap().unwrap();
    assert_eq!(row.execution, Execution::Failed);
    assert_eq!(row.result, Some(result));

    // A plan that claims a call the row does not allow (a rejected row; other arguments) is
    // refused by the store: nothing of the claim is written, and the job (a poison job: every
    // claim of it would be refused the same way) ends `failed` with the refusal as its reason,
    // in a unit of its own.
    insert(&store, &trash_request("r1", &["m1"])).await.unwrap();
    assert!(decide(
        &store,
        "r1",
        &response(ApprovalStatus::Rejected, "web", t0())
    )
    .await
    .unwrap());
    assert!(store
        .claim_job(JobPick::Approval("r1"), "s", LEASE, &[], &claim_call)
        .await
        .unwrap()
        .is_none());
    assert_eq!(job_state(&store, "r1").await, Some(("failed".into(), 1)));
    let r1 = store.approval("r1").await.unwrap().unwrap();
    assert_eq!(
        r1.execution,
        Execution::None,
        "a rejected row has no ledger entry"
    );
    let reason = r1.resume_error.unwrap_or_default();
    assert!(reason.contains("a claim needs an approved row"), "{reason}");
    approved(&store, "a2").await;
    let wrong_arguments = |s: &JobSnapshot| {
        if s.approval_id == "a2" {
            ClaimPlan {
                ledger: LedgerStep::Claim {
                    tool: "trash_email".into(),
                    args_canonical: r#"{"ids":["m9"]}"#.into(),
                },
                ..ClaimPlan::lease_only()
            }
        } else {
            claim_call(s)
        }
    };
    assert!(store
        .claim_job(JobPick::Approval("a2"), "s", LEASE, &[], &wrong_arguments)
        .await
        .unwrap()
        .is_none());
    let a2 = store.approval("a2").await.unwrap().unwrap();
    assert_eq!(a2.execution, Execution::Failed, "consumed, never run");
    let message = a2.result.unwrap()["message"].as_str().unwrap().to_string();
    assert!(message.starts_with("not run:"), "{message}");
    assert!(message.contains("exactly these arguments"), "{message}");
    assert!(store
        .audit(Some("a2"))
        .await
        .unwrap()
        .iter()
        .any(|e| e.kind == AuditKind::Denial));
    // A poison job ahead of others does not hold them up: the next claim ends it and takes
    // the one behind it.
    approved(&store, "p1").await;
    approved(&store, "q3").await;
    let poison_first = |s: &JobSnapshot| {
        if s.approval_id == "p1" {
            wrong_arguments(&JobSnapshot {
                approval_id: "a2".into(),
                ..s.clone()
            })
        } else {
            claim_call(s)
        }
    };
    let next = store
        .claim_job(JobPick::Next, "s", LEASE, &[], &poison_first)
        .await
        .unwrap()
        .expect("the job behind the poison one");
    assert_eq!(next.lease.approval_id, "q3");
    assert_eq!(job_state(&store, "p1").await, Some(("failed".into(), 1)));
    assert_eq!(
        store.approval("p1").await.unwrap().unwrap().execution,
        Execution::Failed
    );
    // The database itself refuses a ledger entry that bypasses the claim, and any claim of an
    // evaluator halt.
    insert(&store, &trash_request("pending", &["m1"]))
        .await
        .unwrap();
    let message = refused(
        &store,
        "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
         SELECT id, tool, args_canonical, 'executing', created_at FROM approvals WHERE id = 'pending'",
    )
    .await;
    assert!(
        message.contains("a claim needs an approved row"),
        "{message}"
    );
    let mut evaluator = trash_request("e1", &[]);
    evaluator.kind = ApprovalKind::Evaluator;
    evaluator.preconditions = Vec::new();
    insert(&store, &evaluator).await.unwrap();
    assert!(decide(
        &store,
        "e1",
        &response(ApprovalStatus::Approved, "web", t0())
    )
    .await
    .unwrap());
    let message = refused(
        &store,
        "INSERT INTO ledger (approval_id, tool, args_canonical, state, claimed_at) \
         SELECT id, tool, args_canonical, 'executing', created_at FROM approvals WHERE id = 'e1'",
    )
    .await;
    assert!(message.contains("never claimed"), "{message}");
}

async fn the_audit_log_is_append_only(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let job = claim(&store, JobPick::Next, "s", claim_call).await.unwrap();
    store
        .record_outcome(&job.lease, LEASE, &outcome())
        .await
        .unwrap();
    for sql in [
        "UPDATE audit_log SET actor = 'nobody'",
        "DELETE FROM audit_log",
    ] {
        let message = refused(&store, sql).await;
        assert!(
            message.contains("the audit log is append-only"),
            "{message}"
        );
    }
    let entries = store.audit(Some("a1")).await.unwrap();
    assert_eq!(
        entries.iter().map(|e| e.kind).collect::<Vec<_>>(),
        [AuditKind::Decision, AuditKind::Execution]
    );
    assert_eq!(entries[0].actor, "owner-phone");
    assert!(entries[0].id < entries[1].id);
    assert!(store.audit(Some("other")).await.unwrap().is_empty());
}

async fn a_resumed_turn_and_its_lines_land_with_the_job_end(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    approved(&store, "a1").await;
    let job = claim(&store, JobPick::Next, "s", lease_only).await.unwrap();
    let transcript = vec![Message::User {
        content: "later".into(),
    }];
    let read = store.transcript("conv-1").await.unwrap();
    assert_eq!(read.version, 1, "the halt wrote the conversation once");
    let finish = JobFinish {
        turn: Some(TurnCommit {
            conversation_id: "conv-1".into(),
            transcript: transcript.clone(),
            transcript_version: read.version,
            lines: vec![ChatLine {
                role: "assistant".into(),
                text: "Done.".into(),
                approval_id: None,
                approval_status: None,
            }],
            halt: None,
            actions: Vec::new(),
            events: Vec::new(),
        }),
        ..done()
    };
    let stale = Lease {
        epoch: 99,
        ..job.lease.clone()
    };
    assert!(matches!(
        store.finish_job(&stale, &finish).await,
        Err(StoreError::LeaseLost(_))
    ));
    assert!(
        store.lines("conv-1").await.unwrap().is_empty(),
        "a fenced end wrote nothing"
    );
    // Written over a version another run already moved past: nothing is written (the writer
    // re-reads and applies its change again; DESIGN §8 "nothing is lost").
    let mut behind = finish.clone();
    behind.turn.as_mut().unwrap().transcript_version = 0;
    assert!(matches!(
        store.finish_job(&job.lease, &behind).await,
        Err(StoreError::TranscriptMoved(_))
    ));
    assert!(
        store.lines("conv-1").await.unwrap().is_empty(),
        "a transcript write behind another wrote nothing"
    );
    assert_eq!(store.transcript("conv-1").await.unwrap(), read);
    store.finish_job(&job.lease, &finish).await.unwrap();
    let after = store.transcript("conv-1").await.unwrap();
    assert_eq!(after.messages, transcript);
    assert_eq!(after.version, 2);
    assert_eq!(store.lines("conv-1").await.unwrap()[0].text, "Done.");
}

async fn pending_decided_and_leased_rows_survive_reopening(engine: Engine) {
    let db = engine.open().await;
    let store = db.store.clone();
    insert(&store, &trash_request("pending", &["m1"]))
        .await
        .unwrap();
    approved(&store, "leased").await;
    approved(&store, "waiting").await;
    let job = claim(&store, JobPick::Approval("leased"), "s", claim_call)
        .await
        .unwrap();
    close(&store).await;
    drop(store);
    let reopened = connect(&db.url, &db.clock).await;
    assert_eq!(
        reopened.approval("pending").await.unwrap().unwrap().status,
        ApprovalStatus::Pending
    );
    assert_eq!(
        reopened
            .approval("leased")
            .await
            .unwrap()
            .unwrap()
            .execution,
        Execution::Executing
    );
    // The waiting job is claimable at once; the leased one once its lease lapses.
    let next = reopened
        .claim_job(JobPick::Next, "t", LEASE, &[], &lease_only)
        .await
        .unwrap()
        .expect("the waiting job");
    assert_eq!(next.lease.approval_id, "waiting");
    assert!(reopened
        .claim_job(JobPick::Next, "t", LEASE, &[], &lease_only)
        .await
        .unwrap()
        .is_none());
    if engine == Engine::Sqlite {
        // One server per SQLite file: at start-up the stopped server's leases lapse at once.
        assert_eq!(reopened.lapse_leases_of_dead_servers().await.unwrap(), 2);
        let taken = reopened
            .claim_job(JobPick::Approval("leased"), "t", LEASE, &[], &lease_only)
            .await
            .unwrap()
            .expect("taken over");
        assert_eq!(taken.snapshot.origin, JobOrigin::TakenOver);
        assert_eq!(taken.lease.epoch, job.lease.epoch + 1);
    } else {
        assert_eq!(reopened.lapse_leases_of_dead_servers().await.unwrap(), 0);
    }
}

// ---------------------------------------------------------------------------------------------
// The suite, once per engine.
// ---------------------------------------------------------------------------------------------

macro_rules! suite {
    ($engine:expr) => {
        #[tokio::test]
        async fn a_halt_writes_row_checkpoint_link_transcript_and_lines_in_one_commit() {
            super::a_halt_writes_row_checkpoint_link_transcript_and_lines_in_one_commit($engine)
                .await;
        }
        #[tokio::test]
        async fn a_decision_makes_one_job_and_the_store_clock_decides_lapses() {
            super::a_decision_makes_one_job_and_the_store_clock_decides_lapses($engine).await;
        }
        #[tokio::test]
        async fn a_job_exists_only_for_a_decided_row_and_is_never_deleted() {
            super::a_job_exists_only_for_a_decided_row_and_is_never_deleted($engine).await;
        }
        #[tokio::test]
        async fn a_lapsed_lease_is_taken_over_and_the_old_holder_writes_nothing() {
            super::a_lapsed_lease_is_taken_over_and_the_old_holder_writes_nothing($engine).await;
        }
        #[tokio::test]
        async fn an_outcome_is_written_once_with_its_audit_under_the_lease() {
            super::an_outcome_is_written_once_with_its_audit_under_the_lease($engine).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn concurrent_claimers_take_each_job_once() {
            super::concurrent_claimers_take_each_job_once($engine).await;
        }
        #[tokio::test]
        async fn the_claim_reports_a_missing_or_corrupt_saved_run_and_a_corrupt_row() {
            super::the_claim_reports_a_missing_or_corrupt_saved_run_and_a_corrupt_row($engine)
                .await;
        }
        #[tokio::test]
        async fn a_refused_call_is_consumed_and_the_claim_rule_is_the_second_line() {
            super::a_refused_call_is_consumed_and_the_claim_rule_is_the_second_line($engine).await;
        }
        #[tokio::test]
        async fn the_audit_log_is_append_only() {
            super::the_audit_log_is_append_only($engine).await;
        }
        #[tokio::test]
        async fn a_resumed_turn_and_its_lines_land_with_the_job_end() {
            super::a_resumed_turn_and_its_lines_land_with_the_job_end($engine).await;
        }
        #[tokio::test]
        async fn pending_decided_and_leased_rows_survive_reopening() {
            super::pending_decided_and_leased_rows_survive_reopening($engine).await;
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
