//! The loaded tools: every plugin's manifest in one [`Registry`], the plugin behind each tool,
//! and each tool's argument schema compiled once (validating a call is on every step's path).
//! Shared by the agent loop (which proposes and runs ungated calls) and the approvals service
//! (which runs pinned calls from their rows).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::manifest::{ManifestError, Registry, ToolSpec};
use crate::plugin::Plugin;

/// Tools and the plugins that provide them.
pub struct Toolbox {
    registry: Registry,
    plugins: BTreeMap<String, Arc<dyn Plugin>>,
    validators: BTreeMap<String, Result<jsonschema::Validator, String>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox")
            .field("plugins", &self.plugins.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Toolbox {
    /// Loads `plugins`' manifests into one registry.
    ///
    /// # Errors
    /// [`ManifestError::DuplicateName`] when two plugins declare the same tool name or alias.
    pub fn new(plugins: Vec<Arc<dyn Plugin>>) -> Result<Toolbox, ManifestError> {
        let registry = Registry::new(plugins.iter().map(|p| p.manifest().clone()))?;
        let validators = registry
            .tools()
            .iter()
            .map(|t| {
                let compiled = jsonschema::validator_for(&t.parameters).map_err(|e| e.to_string());
                (t.name.clone(), compiled)
            })
            .collect();
        let plugins = plugins
            .into_iter()
            .map(|p| (p.manifest().plugin.clone(), p))
            .collect();
        Ok(Toolbox {
            registry,
            plugins,
            validators,
        })
    }

    /// Every declared tool.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The plugin that provides `spec`, if it is loaded.
    pub fn plugin(&self, spec: &ToolSpec) -> Option<&Arc<dyn Plugin>> {
        self.plugins.get(&spec.plugin)
    }

    /// The Plugins page with each loaded plugin's state sentences ([`Plugin::status`]) filled
    /// in: every plugin in load order, as [`Registry::plugin_list`].
    pub async fn plugin_list(&self) -> crate::wire::PluginList {
        let mut list = self.registry.plugin_list();
        for info in &mut list.plugins {
            if let Some(plugin) = self.plugins.get(&info.name) {
                info.status = plugin.status().await;
            }
        }
        list
    }

    /// How the owner can check whether a call of tool `name` ran when its outcome is unknown
    /// ([`Plugin::how_to_check`]), if its plugin says.
    pub fn how_to_check(&self, name: &str) -> Option<String> {
        let spec = self.registry().get(name)?;
        self.plugin(spec)?.how_to_check(name)
    }

    /// Why `spec` cannot run here now (no plugin provides it, or its backend is missing), or
    /// `None` when it can.
    pub fn unavailable(&self, spec: &ToolSpec) -> Option<String> {
        match self.plugin(spec) {
            None => Some(format!("no plugin provides `{}`", spec.name)),
            Some(p) => p.available(&spec.name).err(),
        }
    }

    /// The tools offered to the model: every declared tool whose plugin is loaded and whose
    /// backend is there (a tool that cannot run is never offered).
    pub fn offered(&self) -> Vec<ToolSpec> {
        self.registry
            .tools()
            .iter()
            .filter(|t| self.unavailable(t).is_none())
            .cloned()
            .collect()
    }

    /// Validates model arguments against the tool's JSON Schema. A missing or null argument
    /// object counts as `{}`; a JSON string is parsed first.
    ///
    /// # Errors
    /// Every schema violation, joined, or why the arguments are not JSON.
    pub fn validate(&self, spec: &ToolSpec, args: &Value) -> Result<Value, String> {
        let args = match args {
            Value::Null => json!({}),
            Value::String(s) => {
                serde_json::from_str(s).map_err(|e| format!("arguments are not JSON: {e}"))?
            }
            other => other.clone(),
        };
        let validator = match self.validators.get(&spec.name) {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(format!("the tool's schema does not compile: {e}")),
            None => return Err(format!("tool `{}` is not loaded", spec.name)),
        };
        let errors: Vec<String> = validator
            .iter_errors(&args)
            .map(|e| e.to_string())
            .collect();
        if errors.is_empty() {
            Ok(args)
        } else {
            Err(errors.join("; "))
        }
    }
}
