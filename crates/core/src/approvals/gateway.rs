//! The MCP gateway's gated calls (DESIGN §9 "IRIS as an MCP gateway"): an agent's destructive
//! or pinned call on an upstream MCP server becomes one approval row, by the same rules as IRIS's
//! own agent's ([`DestructiveApprovalHook::pin`]: the card frozen from the manifest's template,
//! the canonical arguments and their hash pinned). The same call again (same agent, tool and
//! canonical arguments, within [`ATTACH_HOURS`] of the card) attaches to that row instead of
//! making another card, unless the agent asks `again`; once the call ran, its result is given
//! to the agent once, and later repeats are told it ran before ([`GatewayAnswer::ExecutedBefore`]).
//!
//! A gateway row has no run of IRIS's to resume: its job (written by the decision like any
//! other) executes the pinned call on the upstream through the gateway's toolbox, under the same
//! lease, write-ahead ledger and unknown-on-takeover rules ([`super::resume`], [`super::execute`]),
//! whether or not the agent calls again; a later call only reads the recorded outcome
//! ([`GatewayAnswer::of`]).

use std::sync::Arc;

use serde_json::Value;

use super::ApprovalService;
use crate::hooks::{DestructiveApprovalHook, PendingCall};
use crate::plugin::CallContext;
use crate::ports::{GatewayRequest, GatewayStore, GatewayWrite, Outbox, StoreError};
use crate::provenance::Provenance;
use crate::toolbox::Toolbox;
use crate::wire::{Approval, ApprovalStatus, Event, Execution};

/// How long the same call attaches to its card, in hours (a day).
pub const ATTACH_HOURS: i64 = 24;

/// How many cards one agent may have waiting for the owner at once, unless configured
/// (`[mcp] max_waiting_per_agent`). An agent that asks faster than the owner answers gets a
/// refusal, not a queue the owner can no longer read: a flood of cards is how consent is worn
/// down until it is given without reading.
pub const MAX_WAITING_PER_AGENT: u32 = 20;

/// What the gateway runs over: its upstreams' tools, where its rows are written, and the rule
/// that pins a row.
pub struct GatewaySettings {
    /// Every upstream's declared tools (named `UPSTREAM.TOOL`), each with the upstream's own
    /// `inputSchema` as its parameters.
    pub toolbox: Arc<Toolbox>,
    /// The find-or-write unit.
    pub store: Arc<dyn GatewayStore>,
    /// The row's terms (clock, lifetime, passkey need), as for IRIS's own agent.
    pub pin: DestructiveApprovalHook,
    /// The most pending cards one agent may have at once (default [`MAX_WAITING_PER_AGENT`]);
    /// a new call beyond it is refused with [`GatewayError::TooManyWaiting`]. The same call
    /// again always attaches to its card.
    pub max_waiting: u32,
    /// The reads each agent passed through lately: a new card's steps and the outside text
    /// its flags look in (docs/adr/0123-how-a-card-came-about.md).
    pub reads: AgentReads,
}

/// How many of an agent's latest reads a gateway card's trail tells.
pub const READS_KEPT: usize = 20;

/// How long a read an agent passed through counts as part of what led to its next call, in
/// minutes.
pub const READS_MINUTES: i64 = 30;

/// The latest reads (calls that needed no card) each agent passed through the gateway, in
/// this server's memory: at most [`READS_KEPT`] per agent, none older than [`READS_MINUTES`].
/// An agent's session is served by one server, so its reads are where its next call is.
#[derive(Debug, Default)]
pub struct AgentReads {
    reads: std::sync::Mutex<Vec<AgentRead>>,
}

#[derive(Debug)]
struct AgentRead {
    agent: String,
    tool: String,
    args: Value,
    result: Value,
    at: chrono::DateTime<chrono::Utc>,
}

impl AgentReads {
    /// Keeps one read of `agent`'s (the tool as the gateway names it, `UPSTREAM.TOOL`), made
    /// `at`, dropping what is past the bounds.
    pub fn record(
        &self,
        agent: &str,
        tool: &str,
        args: &Value,
        result: &Value,
        at: chrono::DateTime<chrono::Utc>,
    ) {
        let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        let since = at - chrono::Duration::minutes(READS_MINUTES);
        reads.retain(|r| r.at >= since);
        reads.push(AgentRead {
            agent: agent.to_owned(),
            tool: tool.to_owned(),
            args: args.clone(),
            result: result.clone(),
            at,
        });
        let mine = reads.iter().filter(|r| r.agent == agent).count();
        if mine > READS_KEPT {
            let mut extra = mine - READS_KEPT;
            reads.retain(|r| {
                if extra > 0 && r.agent == agent {
                    extra -= 1;
                    false
                } else {
                    true
                }
            });
        }
    }

    /// `agent`'s reads made since `now` minus [`READS_MINUTES`], oldest first: (tool, args,
    /// result).
    fn of(&self, agent: &str, now: chrono::DateTime<chrono::Utc>) -> Vec<(String, Value, Value)> {
        let since = now - chrono::Duration::minutes(READS_MINUTES);
        let reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
        reads
            .iter()
            .filter(|r| r.agent == agent && r.at >= since)
            .map(|r| (r.tool.clone(), r.args.clone(), r.result.clone()))
            .collect()
    }
}

/// One gated call an agent made.
#[derive(Debug, Clone, Copy)]
pub struct AgentCall<'a> {
    /// The agent device that asked (its name, from its `agent`-scope token).
    pub agent: &'a str,
    /// The tool as the gateway names it: `UPSTREAM.TOOL`.
    pub tool: &'a str,
    /// The arguments as the agent sent them (without `_meta`).
    pub args: &'a Value,
    /// The reason the agent gave (`_meta` `iris/reason`): shown on the card, never hashed.
    pub reason: Option<&'a str>,
    /// Ask the owner on a new card even when the same call has one (`_meta` `iris/again`):
    /// how an agent does again a call that already ran.
    pub again: bool,
}

/// Why a gated call made no row.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// This server has no MCP upstreams.
    #[error("this IRIS has no MCP upstreams configured")]
    Off,
    /// A tool IRIS's manifest does not declare: never offered, never called.
    #[error("`{0}` is not a tool IRIS's manifest declares; nothing was called")]
    Undeclared(String),
    /// A tool that needs no card (the caller passes it through).
    #[error("`{0}` needs no approval; it is not held")]
    NotGated(String),
    /// The arguments do not fit the upstream's `inputSchema`, or the card cannot be made from
    /// them; nothing was written or called.
    #[error("{0}")]
    Refused(String),
    /// The agent already has as many cards waiting as it may (`GatewaySettings::max_waiting`);
    /// nothing was written or called.
    #[error(
        "{waiting} of this agent's cards are waiting for the owner, the most it may have at \
         once ({max}); no new card is made until the owner answers one or one lapses; nothing \
         was called"
    )]
    TooManyWaiting {
        /// The agent's pending cards, counted when it asked.
        waiting: u32,
        /// The cap.
        max: u32,
    },
    /// Storage failed; nothing was written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What an agent is told about its gated call, read from the row as it stands.
#[derive(Debug, Clone, PartialEq)]
pub enum GatewayAnswer {
    /// Pending, or approved and not yet executed.
    Waiting,
    /// Executed once: the recorded result (the upstream's answer as the plugin kept it), given
    /// to the agent the first time it asks after the execution.
    Executed(Value),
    /// Executed once, and its result already given to the agent: a later repeat of the same
    /// call is told when it ran (`ran_at`, the answer that let it run), never the old result as
    /// new ([`ApprovalService::gateway_answer`]).
    ExecutedBefore {
        /// When the owner's answer let it run (it ran right after).
        ran_at: chrono::DateTime<chrono::Utc>,
    },
    /// Approved, but the call failed or was not run: the recorded result.
    Failed(Value),
    /// The owner rejected it, with the reason given ("no reason given" when none).
    Rejected(String),
    /// Nobody answered in time.
    Lapsed,
    /// It was interrupted while running: it may or may not have run, and never runs again.
    Unknown,
}

impl GatewayAnswer {
    /// The answer `row` gives now.
    pub fn of(row: &Approval) -> GatewayAnswer {
        match row.status {
            ApprovalStatus::Pending => GatewayAnswer::Waiting,
            ApprovalStatus::Rejected => GatewayAnswer::Rejected(
                row.reason
                    .clone()
                    .unwrap_or_else(|| "no reason given".into()),
            ),
            ApprovalStatus::Expired => GatewayAnswer::Lapsed,
            ApprovalStatus::Approved => {
                let result = || row.result.clone().unwrap_or(Value::Null);
                match row.execution {
                    Execution::None | Execution::Executing => GatewayAnswer::Waiting,
                    Execution::Executed => GatewayAnswer::Executed(result()),
                    Execution::Failed => GatewayAnswer::Failed(result()),
                    Execution::Unknown => GatewayAnswer::Unknown,
                }
            }
        }
    }

    /// Whether the answer is final (anything but [`GatewayAnswer::Waiting`]).
    pub fn is_final(&self) -> bool {
        *self != GatewayAnswer::Waiting
    }
}

impl ApprovalService {
    /// What the requesting agent is told about its gateway row `row` now: [`GatewayAnswer::of`],
    /// with an executed call's result given once (docs/liveness.md "gateway writes"): the first
    /// time it is asked for after the execution it is [`GatewayAnswer::Executed`]; every later
    /// time [`GatewayAnswer::ExecutedBefore`].
    ///
    /// # Errors
    /// [`StoreError`] when the delivery cannot be recorded (the result is then not given).
    pub async fn gateway_answer(&self, row: &Approval) -> Result<GatewayAnswer, StoreError> {
        let answer = GatewayAnswer::of(row);
        let (GatewayAnswer::Executed(_), Some(gateway)) = (&answer, &self.gateway) else {
            return Ok(answer);
        };
        match gateway
            .store
            .deliver_result(&row.id, self.clock.now())
            .await?
        {
            None => Ok(answer),
            Some(_) => Ok(GatewayAnswer::ExecutedBefore {
                ran_at: row.responded_at.unwrap_or(row.created_at),
            }),
        }
    }

    /// Runs the MCP gateway's rows with `gateway` (none by default: then every gateway row's
    /// job is refused by strict restore, its tool being declared by no manifest here).
    pub fn with_gateway(mut self, gateway: GatewaySettings) -> ApprovalService {
        self.gateway = Some(gateway);
        self
    }

    /// The toolbox that runs `row`'s call: the gateway's for a row an agent requested through
    /// it, IRIS's own agent's otherwise.
    pub(crate) fn toolbox_for(&self, requested_by: Option<&str>) -> Arc<Toolbox> {
        match (requested_by, &self.gateway) {
            (None, _) => self.agent.toolbox().clone(),
            (Some(_), Some(g)) => g.toolbox.clone(),
            (Some(_), None) => Arc::new(Toolbox::new(Vec::new()).expect("no tools, no clash")),
        }
    }

    /// Keeps a read `agent` passed through the gateway (`tool` as the gateway names it,
    /// `UPSTREAM.TOOL`, with its arguments and result) for the trail and flags of the agent's
    /// next card ([`AgentReads`]). Nothing when this server has no gateway.
    pub fn gateway_read(&self, agent: &str, tool: &str, args: &Value, result: &Value) {
        if let Some(gateway) = &self.gateway {
            gateway
                .reads
                .record(agent, tool, args, result, gateway.pin.clock.now());
        }
    }

    /// Holds `call` on a card: validates its arguments against the upstream's `inputSchema`,
    /// normalises them, and writes the pinned row (announced on every surface by
    /// `approval.requested`), or attaches to the row of the same call made within
    /// [`ATTACH_HOURS`]. A new card is made only while the agent has fewer than
    /// `GatewaySettings::max_waiting` pending.
    ///
    /// # Errors
    /// [`GatewayError::Off`], `Undeclared`, `NotGated`, `Refused` (bad arguments, or the card
    /// cannot be made), `TooManyWaiting`, `Store`; nothing is written.
    pub async fn gateway_request(
        &self,
        call: AgentCall<'_>,
    ) -> Result<GatewayRequest, GatewayError> {
        let gateway = self.gateway.as_ref().ok_or(GatewayError::Off)?;
        let toolbox = &gateway.toolbox;
        let spec = toolbox
            .registry()
            .get(call.tool)
            .ok_or_else(|| GatewayError::Undeclared(call.tool.to_string()))?;
        if !spec.approved_per_call() {
            return Err(GatewayError::NotGated(call.tool.to_string()));
        }
        if let Some(why) = toolbox.unavailable(spec) {
            return Err(GatewayError::Refused(format!(
                "`{}` cannot run here: {why}; nothing was called",
                call.tool
            )));
        }
        let plugin = toolbox
            .plugin(spec)
            .expect("unavailable() is None only when a plugin provides the tool");
        let args = toolbox.validate(spec, call.args).map_err(|why| {
            GatewayError::Refused(format!(
                "the arguments of `{}` do not fit its input schema: {why}; nothing was called",
                call.tool
            ))
        })?;
        let ctx = CallContext {
            run_id: format!("mcp-{}", uuid::Uuid::new_v4().simple()),
            conversation_id: String::new(),
            request: call.reason.unwrap_or_default().to_string(),
        };
        let args = plugin
            .normalise(&spec.name, args, &ctx)
            .await
            .map_err(|e| GatewayError::Refused(format!("{e}; nothing was called")))?;
        // Who asked and why, then what the agent read through the gateway lately
        // (docs/adr/0123-how-a-card-came-about.md).
        let mut provenance = Provenance::agent_asked(call.agent, call.reason);
        for (tool, args, result) in gateway.reads.of(call.agent, gateway.pin.clock.now()) {
            if let Some(read) = toolbox.registry().get(&tool) {
                let plugin = toolbox.plugin(read);
                provenance.record(read, plugin.map(|p| p.as_ref()), &args, &result);
            }
        }
        let pending = PendingCall {
            spec,
            args: &args,
            plugin,
            ctx: &ctx,
            provenance: &provenance,
        };
        let row = match gateway.pin.pin(&pending, Some(call.agent)).await {
            Ok(row) => row,
            Err(why) if !call.again => {
                // A repeat of a call that ran may find its target gone (a file moved, an event
                // deleted) and its card no longer makeable: it still gets its own row's answer.
                let since = gateway.pin.clock.now() - chrono::Duration::hours(ATTACH_HOURS);
                let hash = crate::canonical::call_hash(&spec.name, &args);
                return match gateway.store.same_call(call.agent, &hash, since).await? {
                    Some(approval) => Ok(GatewayRequest {
                        approval,
                        attached: true,
                    }),
                    None => Err(GatewayError::Refused(why)),
                };
            }
            Err(why) => return Err(GatewayError::Refused(why)),
        };
        // `again`: a new card, whatever card the same call has.
        let since = if call.again {
            row.created_at
        } else {
            row.created_at - chrono::Duration::hours(ATTACH_HOURS)
        };
        let outbox = Outbox::of([Event::ApprovalRequested(row.pending_view())]);
        match gateway
            .store
            .request(&row, since, gateway.max_waiting, &outbox)
            .await?
        {
            GatewayWrite::Held(request) => Ok(*request),
            GatewayWrite::Full { waiting } => Err(GatewayError::TooManyWaiting {
                waiting,
                max: gateway.max_waiting,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(minute: i64) -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(1_796_000_000, 0).unwrap()
            + chrono::Duration::minutes(minute)
    }

    #[test]
    fn an_agents_reads_are_its_own_latest_within_the_window() {
        let reads = AgentReads::default();
        for i in 0..(READS_KEPT as i64 + 5) {
            reads.record("a", "files.read", &json!({"n": i}), &json!({}), at(i / 10));
        }
        reads.record("b", "files.read", &json!({"n": "b"}), &json!({}), at(1));
        let mine = reads.of("a", at(3));
        assert_eq!(mine.len(), READS_KEPT, "at most READS_KEPT per agent");
        assert_eq!(mine[0].1, json!({"n": 5}), "the oldest are dropped first");
        assert_eq!(reads.of("b", at(3)).len(), 1, "another agent's are its own");
        // Past the window, none counts.
        assert!(reads.of("a", at(READS_MINUTES + 3)).is_empty());
        assert_eq!(reads.of("a", at(READS_MINUTES)).len(), READS_KEPT);
        assert_eq!(reads.of("a", at(READS_MINUTES + 1)).len(), READS_KEPT - 5);
    }
}
