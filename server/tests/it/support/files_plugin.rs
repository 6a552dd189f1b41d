//! A counting "files" plugin for the kernel suites (`loop_rules`, `lifecycle`): every tool of
//! the manifest it is given runs by recording its name and arguments, so a test can count what
//! executed. Each suite brings its own manifest (which tools exist, their effects, aliases and
//! undo) because that is what its rules are about; the behaviour is shared. (`undo` has its own
//! plugin: it deletes and restores batches of paths, fails on purpose and builds undo calls.)

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use iris_core::manifest::Manifest;
use iris_core::plugin::{CallContext, Description, ItemOutcome, Plugin, ToolError, ToolOutput};
use serde_json::{json, Value};

/// Records every execution. A card names the `path` argument as its one item and line; a call
/// with a `path` reports that item `deleted`; `delete_file` answers with the path it deleted
/// (what the model is sent back, so a retry can be checked to reuse it) and `restore_file`
/// reports 3 files restored (what the lifecycle's bulk-restore rule halts on).
pub struct Files {
    manifest: Manifest,
    runs: Mutex<Vec<(String, Value)>>,
}

impl Files {
    /// The plugin with `manifest` (YAML), nothing run yet.
    pub fn new(manifest: &str) -> Arc<Files> {
        Arc::new(Files {
            manifest: Manifest::from_yaml(manifest).unwrap(),
            runs: Mutex::new(vec![]),
        })
    }

    /// Every execution so far, in order: the tool and its arguments.
    pub fn runs(&self) -> Vec<(String, Value)> {
        self.runs.lock().unwrap().clone()
    }

    /// How many times `tool` ran.
    pub fn count(&self, tool: &str) -> usize {
        self.runs().iter().filter(|(t, _)| t == tool).count()
    }
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
        _tool: &str,
        args: &Value,
        _: &CallContext,
    ) -> Result<Description, ToolError> {
        let path = args["path"].as_str().unwrap_or_default().to_string();
        Ok(Description {
            title: format!("Delete {path}"),
            action: format!("Delete {path}"),
            lines: vec![path.clone()],
            items: vec![path],
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
        let result = match tool {
            "restore_file" => json!({"restored": 3}),
            "delete_file" => json!({"done": tool, "path": args["path"]}),
            _ => json!({"done": tool}),
        };
        let items = args["path"]
            .as_str()
            .map(|p| {
                vec![ItemOutcome {
                    item: p.into(),
                    outcome: json!({"status": "deleted"}),
                }]
            })
            .unwrap_or_default();
        Ok(ToolOutput { result, items })
    }
}
