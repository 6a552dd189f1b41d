//! The cycle's fixture: a no-op destructive plugin, a scripted model, a job runtime with
//! nothing to wake, and the approvals service over them, so what the cycle measures is
//! governance and the database.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use iris_core::agent::{Agent, Pausing};
use iris_core::approval::Ttl;
use iris_core::approvals::{ApprovalService, JobRuntime, LeaseSettings};
use iris_core::manifest::{Manifest, ToolSpec};
use iris_core::model::{Message, Model, ModelError, ModelTurn, ToolCall};
use iris_core::plugin::{CallContext, Description, ItemOutcome, Plugin, ToolError, ToolOutput};
use iris_core::ports::SystemClock;
use iris_core::toolbox::Toolbox;
use iris_store::Store;
use serde_json::{json, Value};

// ---------------------------------------------------------------- the no-op destructive plugin

/// The plugin's manifest: `drop_record` (destructive, with an undo it never needs).
pub(crate) const MANIFEST: &str = r#"
plugin: bench
tools:
  - name: drop_record
    effect: destructive
    undo: keep_record
    undo_window_days: 1
    description: Drops the named records (a no-op for the benchmark).
    parameters:
      type: object
      additionalProperties: false
      required: [ids]
      properties:
        ids:
          type: array
          minItems: 1
          items: {type: string, minLength: 1}
  - name: keep_record
    effect: write
    confirm: never
    description: Brings dropped records back (never called).
"#;

/// A destructive tool that does nothing but count its executions.
pub(crate) struct NoopPlugin {
    pub(crate) manifest: Manifest,
    /// How many times `drop_record` ran.
    pub(crate) executions: AtomicUsize,
}

fn ids(args: &Value) -> Vec<String> {
    args["ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

#[async_trait]
impl Plugin for NoopPlugin {
    fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    async fn normalise(
        &self,
        _tool: &str,
        args: Value,
        _ctx: &CallContext,
    ) -> Result<Value, ToolError> {
        Ok(args)
    }

    async fn describe(
        &self,
        _tool: &str,
        args: &Value,
        _ctx: &CallContext,
    ) -> Result<Description, ToolError> {
        let items = ids(args);
        Ok(Description {
            title: format!("Drop {} record(s)", items.len()),
            action: format!("Drop {} record(s)", items.len()),
            lines: items.iter().map(|i| format!("Record {i}")).collect(),
            items,
            ..Default::default()
        })
    }

    async fn execute(
        &self,
        _tool: &str,
        args: &Value,
        _ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        self.executions.fetch_add(1, Ordering::SeqCst);
        let items = ids(args);
        Ok(ToolOutput {
            result: json!({"dropped": items.len()}),
            items: items
                .into_iter()
                .map(|item| ItemOutcome {
                    item,
                    outcome: json!({"status": "dropped"}),
                })
                .collect(),
        })
    }
}

// ---------------------------------------------------------------- the scripted model

/// Proposes `drop_record(ids=[rec-N])` for "drop record N", then answers "Done".
struct BenchModel;

#[async_trait]
impl Model for BenchModel {
    async fn complete(
        &self,
        messages: &[Message],
        _tools: &[ToolSpec],
    ) -> Result<ModelTurn, ModelError> {
        match messages.last() {
            Some(Message::User { content }) => {
                let n = content.rsplit(' ').next().unwrap_or("0");
                Ok(ModelTurn {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "call-1".into(),
                        name: "drop_record".into(),
                        arguments: json!({"ids": [format!("rec-{n}")]}),
                    }],
                })
            }
            _ => Ok(ModelTurn {
                content: Some("Done: the record was dropped.".into()),
                tool_calls: Vec::new(),
            }),
        }
    }
}

/// The bench's job runtime: nothing to wake (the bench runs each job itself), tokio's timer.
struct BenchJobs;

impl JobRuntime for BenchJobs {
    fn job_ready(&self) {}

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

/// The service over `store`: the no-op plugin, the bench model, default TTLs.
pub(crate) fn service(store: &Store, plugin: Arc<NoopPlugin>) -> ApprovalService {
    let toolbox = Arc::new(Toolbox::new(vec![plugin]).expect("toolbox"));
    let agent = Agent::new(
        Arc::new(BenchModel),
        toolbox,
        Pausing::Governed {
            ttl: Ttl::default(),
            clock: Arc::new(SystemClock),
            passkeys: Default::default(),
        },
        Vec::new(),
    );
    ApprovalService::new(
        Arc::new(store.clone()),
        Arc::new(agent),
        Arc::new(SystemClock),
        LeaseSettings::for_this_process(30),
        Arc::new(BenchJobs),
    )
}
