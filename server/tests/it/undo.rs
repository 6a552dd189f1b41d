//! Undo from the card (DESIGN §9), through the approvals service against the real store (both
//! engines: the test command runs this suite again with `IRIS_KERNEL_ENGINE=postgres`), with
//! time from a [`ManualClock`] the tests move:
//!
//! - the card's undo tool runs once, for exactly the items that executed (the plugin builds its
//!   arguments; the core knows only the tool's name), with an audit entry per item;
//! - any number of taps, at once or later, run it once (409 after, naming who undid it);
//! - a read device cannot (403), an unknown id is 404, a card that did not run or whose tool
//!   declares no undo has nothing to undo (409), and after the window nothing runs (410);
//! - the undo tool run from the chat ("undo that") shows on the cards whose executed items it
//!   acted on, and their button is gone;
//! - a failing undo says so and is not run again; one whose server stopped is `unknown` after
//!   its lease and never runs again; the database refuses an undo of a call that did not run.

use crate::support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Duration, TimeZone, Utc};
use iris_core::agent::{Agent, Pausing};
use iris_core::approval::Ttl;
use iris_core::approvals::{Actor, ApprovalService, UndoError};
use iris_core::manifest::{Manifest, ToolSpec};
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::plugin::{
    CallContext, Description, ItemOutcome, Plugin, ToolError, ToolOutput, UndoCall,
};
use iris_core::ports::{
    ApprovalStore, Clock, ManualClock, NewAuditEntry, Scope, UndoClaim, UndoOutcome, UndoStore,
};
use iris_core::toolbox::Toolbox;
use iris_core::wire::{ApprovalStatus, AuditKind, Decision, Execution, UndoState};
use iris_store::{Store, TimeSource};
use serde_json::{json, Value};

const MANIFEST: &str = r#"
plugin: files
tools:
  - name: delete_files
    effect: destructive
    undo: restore_files
    undo_window_days: 7
    parameters:
      type: object
      properties: {paths: {type: array, items: {type: string}}}
      required: [paths]
      additionalProperties: false
  - name: restore_files
    effect: write
    confirm: never
    parameters:
      type: object
      properties: {paths: {type: array, items: {type: string}, minItems: 1}}
      required: [paths]
      additionalProperties: false
  - name: rename_file
    effect: destructive
    parameters:
      type: object
      properties: {path: {type: string}}
      additionalProperties: false
"#;

/// Deletes paths (a path starting with `gone` is "missing": nothing was deleted); restores
/// paths, failing when one starts with `broken`; records every execution.
struct Files {
    manifest: Manifest,
    runs: Mutex<Vec<(String, Value)>>,
}

impl Files {
    fn new() -> Arc<Files> {
        Arc::new(Files {
            manifest: Manifest::from_yaml(MANIFEST).unwrap(),
            runs: Mutex::new(vec![]),
        })
    }

    fn runs_of(&self, tool: &str) -> Vec<Value> {
        self.runs
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| t == tool)
            .map(|(_, a)| a.clone())
            .collect()
    }
}

fn paths(args: &Value) -> Vec<String> {
    args["paths"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[async_trait]
impl Plugin for Files {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }
    async fn normalise(&self, _: &str, args: Value, _: &CallContext) -> Result<Value, ToolError> {
        Ok(args)
    }
    async fn describe(
        &self,
        tool: &str,
        args: &Value,
        _: &CallContext,
    ) -> Result<Description, ToolError> {
        let items = if tool == "rename_file" {
            vec![args["path"].as_str().unwrap_or_default().to_owned()]
        } else {
            paths(args)
        };
        Ok(Description {
            title: format!("Delete {} files", items.len()),
            action: format!("Delete {} files", items.len()),
            lines: items.clone(),
            undo_action: Some(format!("Restore {} files", items.len())),
            items,
            ..Default::default()
        })
    }
    async fn execute(
        &self,
        tool: &str,
        args: &Value,
        _: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.runs
            .lock()
            .unwrap()
            .push((tool.to_string(), args.clone()));
        let status = |p: &str| match (tool, p.starts_with("gone")) {
            ("delete_files", false) => "deleted",
            ("delete_files", true) => "missing",
            _ => "restored",
        };
        if tool == "restore_files" && paths(args).iter().any(|p| p.starts_with("broken")) {
            return Err(ToolError::Failed {
                tool: tool.into(),
                reason: "the disk refused".into(),
            });
        }
        let items: Vec<ItemOutcome> = paths(args)
            .iter()
            .map(|p| ItemOutcome {
                item: p.clone(),
                outcome: json!({"status": status(p)}),
            })
            .collect();
        let summary = format!("Restored {} files.", items.len());
        Ok(ToolOutput {
            result: json!({"summary": summary}),
            items,
        })
    }
    fn undo_call(&self, tool: &str, outcomes: &[ItemOutcome]) -> Option<UndoCall> {
        let items: Vec<String> = outcomes
            .iter()
            .filter(|o| tool == "delete_files" && o.outcome["status"] == "deleted")
            .map(|o| o.item.clone())
            .collect();
        (!items.is_empty()).then(|| UndoCall {
            args: json!({ "paths": items }),
            action: Some(format!("Restore {} files", items.len())),
            items,
        })
    }
}

/// After "delete A B C" it calls `delete_files` with those paths ("restore A B":
/// `restore_files`, "rename X": `rename_file`); otherwise it answers "finished".
struct Asks;

#[async_trait]
impl Model for Asks {
    async fn complete(
        &self,
        messages: &[Message],
        _: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError> {
        let call = match messages.last() {
            Some(Message::User { content }) => match content.split_once(' ') {
                Some(("delete", rest)) => Some(ToolCall {
                    id: "c1".into(),
                    name: "delete_files".into(),
                    arguments: json!({"paths": rest.split(' ').collect::<Vec<_>>()}),
                }),
                Some(("restore", rest)) => Some(ToolCall {
                    id: "c1".into(),
                    name: "restore_files".into(),
                    arguments: json!({"paths": rest.split(' ').collect::<Vec<_>>()}),
                }),
                Some(("rename", rest)) => Some(ToolCall {
                    id: "c1".into(),
                    name: "rename_file".into(),
                    arguments: json!({ "path": rest }),
                }),
                _ => None,
            },
            _ => None,
        };
        Ok(match call {
            Some(call) => ModelTurn {
                content: None,
                tool_calls: vec![call],
            },
            None => ModelTurn {
                content: Some("finished".into()),
                tool_calls: vec![],
            },
        })
    }
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 10, 0, 0).unwrap()
}

fn actor(name: &str, scope: Scope) -> Actor {
    Actor {
        name: name.into(),
        scope,
        surface: iris_core::wire::Surface::Web,
    }
}

struct World {
    store: Store,
    _database: Option<iris_store::testing::DropDatabase>,
    clock: Arc<ManualClock>,
    files: Arc<Files>,
    service: Arc<ApprovalService>,
}

impl World {
    async fn new() -> World {
        let clock = Arc::new(ManualClock::new(t0()));
        let (store, database) = support::kernel_store_on(TimeSource::Clock(clock.clone())).await;
        let files = Files::new();
        let toolbox = Arc::new(Toolbox::new(vec![files.clone() as Arc<dyn Plugin>]).unwrap());
        let pausing = Pausing::Governed {
            ttl: Ttl::default(),
            clock: clock.clone(),
            passkeys: Default::default(),
        };
        let agent = Agent::new(Arc::new(Asks), toolbox, pausing, vec![]);
        let service = Arc::new(support::service(&store, agent, clock.clone()));
        World {
            store,
            _database: database,
            clock,
            files,
            service,
        }
    }

    /// A card for `message`, answered with `decision` and its job run (the call executes when
    /// approved). Its id.
    async fn answered(&self, message: &str, decision: Decision) -> String {
        let owner = actor("owner-phone", Scope::Control);
        let turn = self.service.chat(&owner, None, message).await.unwrap();
        let id = turn.approval_id.expect("a card");
        self.service
            .respond(&id, decision, None, &owner)
            .await
            .unwrap();
        self.service.run_job(&id).await.unwrap();
        id
    }

    async fn undo_entries(&self, id: &str) -> Vec<iris_core::wire::AuditEntry> {
        self.store
            .audit(Some(id))
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == AuditKind::Undo)
            .collect()
    }
}

#[tokio::test]
async fn the_undo_runs_once_for_exactly_the_items_that_executed() {
    let w = World::new().await;
    let id = w.answered("delete a gone-b c", Decision::Approve).await;
    let row = w.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(row.execution, Execution::Executed);
    assert!(row.undo_offered(w.clock.now()));
    // The card said "Restore 3 files"; two ran, and the button says so.
    assert_eq!(row.card.undo_action.as_deref(), Some("Restore 3 files"));
    assert_eq!(row.undo_label(), "Restore 2 files");

    // A read device may not; nothing ran.
    let read = actor("wall", Scope::Read);
    assert!(matches!(
        w.service.undo(&id, &read).await,
        Err(UndoError::Forbidden(_))
    ));
    assert!(matches!(
        w.service
            .undo("no-such-card", &actor("phone", Scope::Control))
            .await,
        Err(UndoError::NotFound(_))
    ));
    assert!(w.files.runs_of("restore_files").is_empty());

    let phone = actor("phone", Scope::Control);
    let undone = w.service.undo(&id, &phone).await.unwrap();
    // Exactly the two items that were deleted, never the missing one.
    assert_eq!(
        w.files.runs_of("restore_files"),
        vec![json!({"paths": ["a", "c"]})]
    );
    let undo = undone.undo.clone().unwrap();
    assert_eq!(undo.state, UndoState::Done);
    assert_eq!(undo.items, vec!["a", "c"]);
    assert_eq!((undo.by.as_str(), undo.surface.as_str()), ("phone", "web"));
    assert_eq!(undo.result.unwrap()["summary"], "Restored 2 files.");
    assert_eq!(w.store.approval(&id).await.unwrap().unwrap(), undone);
    assert!(!undone.undo_offered(w.clock.now()));

    // The audit: the request, one entry per item, the end.
    let entries = w.undo_entries(&id).await;
    let items: Vec<Option<&str>> = entries.iter().map(|e| e.item.as_deref()).collect();
    assert_eq!(items, vec![None, Some("a"), Some("c"), None]);
    assert_eq!(entries[0].result["status"], "requested");
    assert_eq!(entries[0].result["action"], "Restore 2 files");
    assert_eq!(entries[3].result["status"], "done");
    assert!(entries.iter().all(|e| e.actor == "phone"));

    // A second tap, later: 409 naming who undid it; nothing runs again.
    w.clock.advance(Duration::minutes(5));
    match w.service.undo(&id, &phone).await {
        Err(e @ UndoError::AlreadyUndone(_)) => {
            assert!(e.to_string().contains("by phone via web"), "{e}")
        }
        other => panic!("expected AlreadyUndone, got {other:?}"),
    }
    assert_eq!(w.files.runs_of("restore_files").len(), 1);
    assert_eq!(w.undo_entries(&id).await.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn taps_at_once_run_the_undo_once() {
    let w = World::new().await;
    let id = w.answered("delete a b", Decision::Approve).await;
    let taps = (0..8).map(|i| {
        let (service, id) = (w.service.clone(), id.clone());
        tokio::spawn(async move {
            service
                .undo(&id, &actor(&format!("device-{i}"), Scope::Control))
                .await
        })
    });
    let answers = futures::future::join_all(taps).await;
    let done = answers.iter().filter(|a| matches!(a, Ok(Ok(_)))).count();
    let refused = answers
        .iter()
        .filter(|a| matches!(a, Ok(Err(UndoError::AlreadyUndone(_)))))
        .count();
    assert_eq!((done, refused), (1, 7), "{answers:?}");
    assert_eq!(w.files.runs_of("restore_files").len(), 1);
}

#[tokio::test]
async fn nothing_to_undo_and_a_closed_window_change_nothing() {
    let w = World::new().await;
    let owner = actor("phone", Scope::Control);

    // Rejected: the call never ran.
    let rejected = w.answered("delete a", Decision::Reject).await;
    assert!(matches!(
        w.service.undo(&rejected, &owner).await,
        Err(UndoError::NothingToUndo(..))
    ));
    // Pending.
    let pending = w
        .service
        .chat(&owner, None, "delete p")
        .await
        .unwrap()
        .approval_id
        .unwrap();
    assert!(matches!(
        w.service.undo(&pending, &owner).await,
        Err(UndoError::NothingToUndo(..))
    ));
    // Approved, its job not run yet: not "did not run", and nothing is claimed.
    let waiting = w
        .service
        .chat(&owner, None, "delete w")
        .await
        .unwrap()
        .approval_id
        .unwrap();
    w.service
        .respond(&waiting, Decision::Approve, None, &owner)
        .await
        .unwrap();
    match w.service.undo(&waiting, &owner).await {
        Err(e @ UndoError::NothingToUndo(..)) => {
            assert!(e.to_string().contains("has not finished yet"), "{e}")
        }
        other => panic!("expected NothingToUndo, got {other:?}"),
    }
    assert!(w.undo_entries(&waiting).await.is_empty());
    // A tool that declares no undo.
    let renamed = w.answered("rename x", Decision::Approve).await;
    assert!(matches!(
        w.service.undo(&renamed, &owner).await,
        Err(UndoError::NothingToUndo(..))
    ));
    // Executed, but no item of it ran.
    let missing = w.answered("delete gone-a", Decision::Approve).await;
    match w.service.undo(&missing, &owner).await {
        Err(e @ UndoError::NothingToUndo(..)) => {
            assert!(e.to_string().contains("no item of it ran"), "{e}")
        }
        other => panic!("expected NothingToUndo, got {other:?}"),
    }

    // The window: 7 days after the answer, to the instant.
    let id = w.answered("delete a b", Decision::Approve).await;
    let answered_at = w
        .store
        .approval(&id)
        .await
        .unwrap()
        .unwrap()
        .responded_at
        .unwrap();
    w.clock.advance(Duration::days(7));
    assert_eq!(w.clock.now(), answered_at + Duration::days(7));
    let row = w.store.approval(&id).await.unwrap().unwrap();
    assert!(!row.undo_offered(w.clock.now()));
    match w.service.undo(&id, &owner).await {
        Err(e @ UndoError::WindowClosed(..)) => {
            assert!(e.to_string().contains("nothing was changed"), "{e}")
        }
        other => panic!("expected WindowClosed, got {other:?}"),
    }
    assert!(w.files.runs_of("restore_files").is_empty());
    for id in [rejected, pending, renamed, missing, id] {
        assert!(
            w.undo_entries(&id).await.is_empty(),
            "{id} has undo entries"
        );
        assert!(w.store.approval(&id).await.unwrap().unwrap().undo.is_none());
    }
}

#[tokio::test]
async fn a_failed_undo_says_why_and_is_not_run_again() {
    let w = World::new().await;
    let owner = actor("phone", Scope::Control);
    let id = w.answered("delete broken-a b", Decision::Approve).await;
    let row = w.service.undo(&id, &owner).await.unwrap();
    let undo = row.undo.unwrap();
    assert_eq!(undo.state, UndoState::Failed);
    let message = undo.result.unwrap()["message"].as_str().unwrap().to_owned();
    assert!(message.contains("the disk refused"), "{message}");
    assert!(matches!(
        w.service.undo(&id, &owner).await,
        Err(UndoError::AlreadyUndone(_))
    ));
    assert_eq!(w.files.runs_of("restore_files").len(), 1);
}

fn claim(id: &str, at: DateTime<Utc>) -> UndoClaim {
    UndoClaim {
        approval_id: id.into(),
        tool: "restore_files".into(),
        args_canonical: r#"{"paths":["a"]}"#.into(),
        items: vec!["a".into()],
        by: "phone".into(),
        surface: "web".into(),
        at,
        lease_secs: 60,
        audit: NewAuditEntry {
            approval_id: id.into(),
            kind: AuditKind::Undo,
            item: None,
            result: json!({"status": "requested"}),
            undo_available: false,
            actor: "phone".into(),
            surface: Some("web".into()),
            at,
        },
        outbox: iris_core::ports::Outbox::default(),
    }
}

#[tokio::test]
async fn an_undo_whose_server_stopped_is_unknown_and_never_runs_again() {
    let w = World::new().await;
    let id = w.answered("delete a", Decision::Approve).await;
    // A server claimed it and stopped before its outcome.
    assert!(w.store.claim_undo(&claim(&id, t0())).await.unwrap());
    assert!(
        !w.store.claim_undo(&claim(&id, t0())).await.unwrap(),
        "once"
    );
    w.clock.advance(Duration::seconds(59));
    assert_eq!(w.service.lapse_undos().await.unwrap(), 0);
    w.clock.advance(Duration::seconds(1));
    assert_eq!(w.store.lapsed_undos().await.unwrap(), vec![id.clone()]);
    assert_eq!(w.service.lapse_undos().await.unwrap(), 1);
    assert_eq!(w.service.lapse_undos().await.unwrap(), 0, "once");
    let row = w.store.approval(&id).await.unwrap().unwrap();
    let undo = row.undo.as_ref().unwrap();
    assert_eq!(undo.state, UndoState::Unknown);
    assert_eq!(undo.at, t0(), "asked when it was asked");
    assert!(undo.result.as_ref().unwrap()["message"]
        .as_str()
        .unwrap()
        .contains("may or may not have run"));
    // The trail says so, as the sweep.
    let end = w.undo_entries(&id).await.pop().unwrap();
    assert_eq!(end.result["status"], "unknown");
    assert_eq!(end.surface.as_deref(), Some("sweep"));
    // The stopped server's late outcome is refused; a tap is 409; nothing ran.
    let late = UndoOutcome {
        approval_id: id.clone(),
        state: UndoState::Done,
        result: json!({}),
        at: t0(),
        audit: vec![],
        outbox: iris_core::ports::Outbox::default(),
    };
    assert!(!w.store.record_undo(&late).await.unwrap());
    assert!(matches!(
        w.service.undo(&id, &actor("phone", Scope::Control)).await,
        Err(UndoError::AlreadyUndone(_))
    ));
    assert!(w.files.runs_of("restore_files").is_empty());
}

#[tokio::test]
async fn the_database_refuses_an_undo_of_a_call_that_did_not_run() {
    let w = World::new().await;
    let rejected = w.answered("delete a", Decision::Reject).await;
    assert_eq!(
        w.store.approval(&rejected).await.unwrap().unwrap().status,
        ApprovalStatus::Rejected
    );
    let refused = w.store.claim_undo(&claim(&rejected, t0())).await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(w
        .store
        .approval(&rejected)
        .await
        .unwrap()
        .unwrap()
        .undo
        .is_none());
}

#[tokio::test]
async fn an_undo_from_the_chat_shows_on_the_cards_it_reversed() {
    let w = World::new().await;
    let first = w.answered("delete a b", Decision::Approve).await;
    let second = w.answered("delete c", Decision::Approve).await;
    let owner = actor("owner-phone", Scope::Control);
    let turn = w.service.chat(&owner, None, "restore a z").await.unwrap();
    assert_eq!(turn.reply, "finished");
    assert_eq!(
        w.files.runs_of("restore_files"),
        vec![json!({"paths": ["a", "z"]})]
    );

    // The first card notes the item the chat's undo acted on; its own undo stays for the rest
    // (a card's undo is consumed only for the items actually restored).
    let row = w.store.approval(&first).await.unwrap().unwrap();
    assert!(row.undo.is_none(), "{:?}", row.undo);
    assert!(row.undo_offered(w.clock.now()));
    let noted: Vec<(Option<String>, String)> = w
        .undo_entries(&first)
        .await
        .into_iter()
        .map(|e| (e.item, e.actor))
        .collect();
    assert_eq!(noted, vec![(Some("a".into()), "owner-phone".into())]);
    // Its button names what is left, not what ran ("Restore 2 files" before the chat's undo).
    assert_eq!(row.undo_left.as_deref(), Some("Restore 1 files"));
    assert_eq!(row.undo_label(), "Restore 1 files");
    // Its undo then restores only what is left, once.
    let undone = w.service.undo(&first, &owner).await.unwrap();
    assert_eq!(undone.undo.expect("the card's own undo").items, vec!["b"]);
    assert_eq!(
        w.files.runs_of("restore_files"),
        vec![json!({"paths": ["a", "z"]}), json!({"paths": ["b"]})]
    );
    assert!(matches!(
        w.service.undo(&first, &owner).await,
        Err(UndoError::AlreadyUndone(_))
    ));

    // A chat undo of all that is left of a card is that card's undo: it shows there and its
    // button is gone.
    w.service.chat(&owner, None, "restore c").await.unwrap();
    let other = w.store.approval(&second).await.unwrap().unwrap();
    let undo = other.undo.clone().expect("the card shows the chat's undo");
    assert_eq!(undo.state, UndoState::Done);
    assert_eq!(undo.items, vec!["c"]);
    assert_eq!(undo.by, "owner-phone");
    assert!(!other.undo_offered(w.clock.now()));
    assert!(matches!(
        w.service.undo(&second, &owner).await,
        Err(UndoError::AlreadyUndone(_))
    ));
    assert_eq!(w.files.runs_of("restore_files").len(), 3);
}
