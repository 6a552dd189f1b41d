//! Escalation rules (DESIGN §2 "escalation", §3 step 10, §8 fail closed) with in-memory fakes
//! for the judge, the curator store and the re-runner: escalate acts only on a reported, empty
//! `effects_executed`; never on executed effects, an unknown report or a resumed run; shadow
//! records and never acts; enforce acts and records; the hop limit holds and every hop
//! re-checks before acting.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, TimeZone, Utc};
use iris_core::escalation::{
    gate, CuratorRecord, CuratorStore, EscalationError, EscalationMode, Escalator, FinishedTurn,
    Judge, Judgement, NotActed, RuleJudge, TurnRunner, Verdict,
};
use iris_core::ports::{Clock, StoreError};
use iris_core::wire::{ChatResponse, Effect, RunStatus};
use serde_json::json;

#[derive(Default)]
struct MemoryCurator {
    rows: Mutex<Vec<CuratorRecord>>,
    fail: bool,
}

#[async_trait]
impl CuratorStore for MemoryCurator {
    async fn record(&self, record: &CuratorRecord) -> Result<(), StoreError> {
        if self.fail {
            return Err(StoreError::Backend("the curator table is gone".into()));
        }
        self.rows.lock().unwrap().push(record.clone());
        Ok(())
    }
    async fn records(
        &self,
        conversation_id: Option<&str>,
    ) -> Result<Vec<CuratorRecord>, StoreError> {
        Ok(self
            .rows
            .lock()
            .unwrap()
            .iter()
            .filter(|r| conversation_id.is_none_or(|c| r.conversation_id == c))
            .cloned()
            .collect())
    }
}

/// Always the same verdict; counts the turns it judged.
struct Always(Verdict, AtomicUsize);

#[async_trait]
impl Judge for Always {
    async fn judge(&self, _: &FinishedTurn) -> Judgement {
        self.1.fetch_add(1, Ordering::SeqCst);
        Judgement::new(self.0, format!("always {}", self.0.as_str()))
    }
}

/// Re-runs by answering with a fixed shape; records every message it was given.
struct Runner {
    effects: Vec<Effect>,
    messages: Mutex<Vec<(Option<String>, String)>>,
    fail: bool,
}

impl Runner {
    fn new(effects: Vec<Effect>) -> Arc<Runner> {
        Arc::new(Runner {
            effects,
            messages: Mutex::new(vec![]),
            fail: false,
        })
    }
    fn runs(&self) -> usize {
        self.messages.lock().unwrap().len()
    }
}

#[async_trait]
impl TurnRunner for Runner {
    async fn run_turn(
        &self,
        conversation_id: Option<String>,
        message: &str,
    ) -> Result<ChatResponse, StoreError> {
        let n = {
            let mut m = self.messages.lock().unwrap();
            m.push((conversation_id.clone(), message.to_string()));
            m.len()
        };
        if self.fail {
            return Err(StoreError::Backend("down".into()));
        }
        Ok(ChatResponse {
            conversation_id: conversation_id.unwrap_or_default(),
            run_id: format!("rerun-{n}"),
            status: RunStatus::Done,
            reply: format!("second try {n}"),
            approval_id: None,
            effects_executed: self.effects.clone(),
            resumed: false,
        })
    }
}

struct Fixed;
impl Clock for Fixed {
    fn now(&self) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 5).unwrap()
    }
}

fn turn(effects: Option<Vec<Effect>>, resumed: bool) -> FinishedTurn {
    FinishedTurn {
        request: "trash the promos".into(),
        conversation_id: "conv-1".into(),
        run_id: "run-1".into(),
        status: RunStatus::Done,
        reply: "I can't do that.".into(),
        approval_id: None,
        effects_executed: effects,
        resumed,
    }
}

struct Rig {
    escalator: Escalator,
    curator: Arc<MemoryCurator>,
    judge: Arc<Always>,
    runner: Arc<Runner>,
}

fn rig(mode: EscalationMode, verdict: Verdict, rerun_effects: Vec<Effect>, max_hops: u32) -> Rig {
    let curator = Arc::new(MemoryCurator::default());
    let judge = Arc::new(Always(verdict, AtomicUsize::new(0)));
    let runner = Runner::new(rerun_effects);
    Rig {
        escalator: Escalator {
            mode,
            judge: judge.clone(),
            curator: curator.clone(),
            runner: runner.clone(),
            clock: Arc::new(Fixed),
            max_hops,
        },
        curator,
        judge,
        runner,
    }
}

#[tokio::test]
async fn escalate_acts_on_reported_empty_effects_and_records_it() {
    let r = rig(
        EscalationMode::Enforce,
        Verdict::Escalate,
        vec![Effect::Write],
        1,
    );
    let out = r.escalator.maybe_escalate(turn(Some(vec![]), false)).await;
    assert!(out.error.is_none());
    assert_eq!(r.runner.runs(), 1);
    // Same conversation, the owner's request plus the judge's reason.
    let (conv, message) = r.runner.messages.lock().unwrap()[0].clone();
    assert_eq!(conv.as_deref(), Some("conv-1"));
    assert!(message.starts_with("trash the promos"), "{message}");
    assert!(message.contains("always escalate"), "{message}");
    // The answer is the re-run's; the request stays the owner's own words.
    assert_eq!(out.turn.run_id, "rerun-1");
    assert_eq!(out.turn.request, "trash the promos");
    // Hop 0 acted; hop 1 (the re-run wrote) was judged and recorded, and not acted on.
    let rows = r.curator.records(Some("conv-1")).await.unwrap();
    assert_eq!(rows, out.records);
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].hop, rows[0].acted, rows[0].not_acted),
        (0, true, None)
    );
    assert_eq!(rows[0].run_id, "run-1");
    assert_eq!(rows[0].verdict, Verdict::Escalate);
    assert_eq!(rows[0].mode, EscalationMode::Enforce);
    assert_eq!(rows[0].reason, "always escalate");
    assert_eq!(rows[0].at, Fixed.now());
    assert_eq!(
        (rows[1].hop, rows[1].acted, rows[1].not_acted),
        (1, false, Some(NotActed::EffectsExecuted))
    );
    assert_eq!(rows[1].run_id, "rerun-1");
}

#[tokio::test]
async fn never_acts_on_executed_effects() {
    for effects in [
        vec![Effect::Write],
        vec![Effect::Destructive],
        vec![Effect::Write; 2],
    ] {
        let r = rig(EscalationMode::Enforce, Verdict::Escalate, vec![], 3);
        let out = r.escalator.maybe_escalate(turn(Some(effects), false)).await;
        assert_eq!(r.runner.runs(), 0);
        assert_eq!(out.turn.run_id, "run-1");
        let rows = r.curator.records(None).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert!(!rows[0].acted);
        assert_eq!(rows[0].not_acted, Some(NotActed::EffectsExecuted));
    }
}

#[tokio::test]
async fn never_acts_on_an_unknown_report() {
    let r = rig(EscalationMode::Enforce, Verdict::Escalate, vec![], 3);
    let out = r.escalator.maybe_escalate(turn(None, false)).await;
    assert_eq!(r.runner.runs(), 0);
    assert_eq!(out.records[0].not_acted, Some(NotActed::EffectsUnknown));

    // A result body without the field (or with null) is unknown; without `resumed` it is
    // read as resumed. Both fail closed.
    let body = json!({"conversation_id": "c", "run_id": "r", "status": "done", "reply": "",
                      "approval_id": null, "resumed": false});
    let t = FinishedTurn::from_json("x", &body).unwrap();
    assert_eq!(t.effects_executed, None);
    assert_eq!(
        gate(&t, Verdict::Escalate, EscalationMode::Enforce, 0, 5),
        Err(NotActed::EffectsUnknown)
    );
    let mut body2 = body.clone();
    body2["effects_executed"] = json!(null);
    assert_eq!(
        FinishedTurn::from_json("x", &body2)
            .unwrap()
            .effects_executed,
        None
    );
    let mut body3 = body.clone();
    body3["effects_executed"] = json!([]);
    body3.as_object_mut().unwrap().remove("resumed");
    let t3 = FinishedTurn::from_json("x", &body3).unwrap();
    assert!(t3.resumed);
    assert_eq!(
        gate(&t3, Verdict::Escalate, EscalationMode::Enforce, 0, 5),
        Err(NotActed::Resumed)
    );
    body3["resumed"] = json!(false);
    let t4 = FinishedTurn::from_json("x", &body3).unwrap();
    assert_eq!(
        gate(&t4, Verdict::Escalate, EscalationMode::Enforce, 0, 5),
        Ok(())
    );
}

#[tokio::test]
async fn never_acts_on_a_resumed_run() {
    let r = rig(EscalationMode::Enforce, Verdict::Escalate, vec![], 3);
    let out = r.escalator.maybe_escalate(turn(Some(vec![]), true)).await;
    assert_eq!(r.runner.runs(), 0);
    assert_eq!(out.records.len(), 1);
    assert_eq!(out.records[0].not_acted, Some(NotActed::Resumed));
}

#[tokio::test]
async fn never_acts_on_a_run_waiting_for_approval() {
    let r = rig(EscalationMode::Enforce, Verdict::Escalate, vec![], 3);
    let mut t = turn(Some(vec![]), false);
    t.status = RunStatus::AwaitingApproval;
    t.approval_id = Some("a1".into());
    let out = r.escalator.maybe_escalate(t).await;
    assert_eq!(r.runner.runs(), 0);
    assert_eq!(out.records[0].not_acted, Some(NotActed::AwaitingApproval));
}

#[tokio::test]
async fn shadow_records_every_verdict_and_never_acts() {
    for verdict in [
        Verdict::Ok,
        Verdict::Escalate,
        Verdict::Reroute,
        Verdict::Clarify,
    ] {
        let r = rig(EscalationMode::Shadow, verdict, vec![], 3);
        let out = r.escalator.maybe_escalate(turn(Some(vec![]), false)).await;
        assert_eq!(r.runner.runs(), 0, "{verdict:?}");
        assert_eq!(out.turn.run_id, "run-1");
        let rows = r.curator.records(None).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].verdict, verdict);
        assert_eq!(rows[0].mode, EscalationMode::Shadow);
        assert!(!rows[0].acted);
        let why = if verdict == Verdict::Escalate {
            NotActed::Shadow
        } else {
            NotActed::NoAction
        };
        assert_eq!(rows[0].not_acted, Some(why));
    }
}

#[tokio::test]
async fn enforce_records_verdicts_without_an_action() {
    for verdict in [Verdict::Ok, Verdict::Reroute, Verdict::Clarify] {
        let r = rig(EscalationMode::Enforce, verdict, vec![], 3);
        let out = r.escalator.maybe_escalate(turn(Some(vec![]), false)).await;
        assert_eq!(r.runner.runs(), 0);
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.records[0].not_acted, Some(NotActed::NoAction));
    }
}

#[tokio::test]
async fn off_neither_judges_nor_records() {
    let r = rig(EscalationMode::Off, Verdict::Escalate, vec![], 3);
    let out = r.escalator.maybe_escalate(turn(Some(vec![]), false)).await;
    assert_eq!(r.judge.1.load(Ordering::SeqCst), 0);
    assert_eq!(r.runner.runs(), 0);
    assert!(out.records.is_empty());
    assert!(r.curator.records(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn the_hop_limit_holds_and_every_hop_is_rechecked() {
    // Every re-run again reports nothing executed and the judge always escalates: exactly
    // max_hops re-runs, one record per hop, the last one stopped by the limit.
    for max_hops in [0, 1, 3] {
        let r = rig(EscalationMode::Enforce, Verdict::Escalate, vec![], max_hops);
        let out = r.escalator.maybe_escalate(turn(Some(vec![]), false)).await;
        assert_eq!(r.runner.runs(), max_hops as usize);
        let rows = r.curator.records(None).await.unwrap();
        assert_eq!(rows.len(), max_hops as usize + 1);
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row.hop, i as u32);
        }
        assert!(rows[..max_hops as usize].iter().all(|r| r.acted));
        let last = rows.last().unwrap();
        assert_eq!(last.not_acted, Some(NotActed::HopLimit));
        assert_eq!(r.judge.1.load(Ordering::SeqCst), max_hops as usize + 1);
        // Notes never stack: every re-run gets the owner's request once.
        for (_, m) in r.runner.messages.lock().unwrap().iter() {
            assert_eq!(m.matches("trash the promos").count(), 1);
        }
        if max_hops > 0 {
            assert_eq!(out.turn.run_id, format!("rerun-{max_hops}"));
        }
    }
}

#[tokio::test]
async fn an_unrecorded_verdict_never_acts() {
    let mut r = rig(EscalationMode::Enforce, Verdict::Escalate, vec![], 3);
    r.escalator.curator = Arc::new(MemoryCurator {
        rows: Mutex::new(vec![]),
        fail: true,
    });
    let out = r.escalator.maybe_escalate(turn(Some(vec![]), false)).await;
    assert_eq!(r.runner.runs(), 0);
    assert!(matches!(out.error, Some(EscalationError::Record(_))));
    assert_eq!(out.turn.run_id, "run-1");
}

#[tokio::test]
async fn a_failed_rerun_leaves_the_previous_answer() {
    let runner = Arc::new(Runner {
        effects: vec![],
        messages: Mutex::new(vec![]),
        fail: true,
    });
    let mut r = rig(EscalationMode::Enforce, Verdict::Escalate, vec![], 3);
    r.escalator.runner = runner.clone();
    let out = r.escalator.maybe_escalate(turn(Some(vec![]), false)).await;
    assert_eq!(runner.runs(), 1);
    assert!(matches!(out.error, Some(EscalationError::Rerun(_))));
    assert_eq!(out.turn.run_id, "run-1");
    assert_eq!(out.records.len(), 1);
    assert!(out.records[0].acted);
}

#[test]
fn the_rule_judge() {
    let mut t = turn(Some(vec![]), false);
    let v = |t: &FinishedTurn| RuleJudge::verdict(t).verdict;
    t.reply = "I’m unable to find that folder.".into();
    assert_eq!(v(&t), Verdict::Escalate);
    t.reply = "   ".into();
    assert_eq!(v(&t), Verdict::Escalate);
    t.reply = "Which account do you mean?".into();
    assert_eq!(v(&t), Verdict::Clarify);
    t.reply = "Moved 3 emails to Trash.".into();
    assert_eq!(v(&t), Verdict::Ok);
    t.status = RunStatus::Failed;
    assert_eq!(v(&t), Verdict::Escalate);
    t.status = RunStatus::AwaitingApproval;
    t.reply = String::new();
    assert_eq!(v(&t), Verdict::Ok);
    t.status = RunStatus::Refused;
    t.reply = "I cannot: approvals are off.".into();
    assert_eq!(v(&t), Verdict::Ok);
}

#[test]
fn spellings_round_trip() {
    for v in [
        Verdict::Ok,
        Verdict::Escalate,
        Verdict::Reroute,
        Verdict::Clarify,
    ] {
        assert_eq!(Verdict::parse(v.as_str()), Some(v));
        assert_eq!(json!(v), json!(v.as_str()));
    }
    for m in [
        EscalationMode::Off,
        EscalationMode::Shadow,
        EscalationMode::Enforce,
    ] {
        assert_eq!(EscalationMode::parse(m.as_str()), Some(m));
        assert_eq!(json!(m), json!(m.as_str()));
    }
    for n in [
        NotActed::Resumed,
        NotActed::EffectsUnknown,
        NotActed::EffectsExecuted,
        NotActed::AwaitingApproval,
        NotActed::NoAction,
        NotActed::HopLimit,
        NotActed::Shadow,
    ] {
        assert_eq!(NotActed::parse(n.as_str()), Some(n));
        assert_eq!(json!(n), json!(n.as_str()));
        assert!(!n.explain().is_empty());
    }
    assert_eq!(EscalationMode::default(), EscalationMode::Off);
}
