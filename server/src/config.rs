//! Settings (DESIGN §7): the file `iris.toml` (path from `IRIS_CONFIG`, default `./iris.toml`),
//! each key overridable by its `IRIS_*` environment variable. Loaded with figment.

use std::path::PathBuf;

use figment::providers::{Env, Format, Toml};
use figment::Figment;
use iris_core::escalation::EscalationMode;
use serde::Deserialize;

/// One mail account of `[[email.accounts]]`, in the fixed order used to choose a sender.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct AccountSetting {
    /// Account name (e.g. `personal`).
    pub name: String,
    /// The owner's address on it.
    #[serde(default)]
    pub address: String,
    /// `maildir` or `imap`.
    pub kind: String,
    /// Maildir root (kind `maildir`).
    #[serde(default)]
    pub path: Option<PathBuf>,
    /// IMAP host.
    #[serde(default)]
    pub host: Option<String>,
    /// IMAP port.
    #[serde(default)]
    pub port: Option<u16>,
    /// IMAP user.
    #[serde(default)]
    pub user: Option<String>,
    /// Environment variable holding the IMAP password.
    #[serde(default)]
    pub password_env: Option<String>,
}

/// The `[email]` table.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
pub struct EmailSettings {
    /// Accounts in order.
    #[serde(default)]
    pub accounts: Vec<AccountSetting>,
}

/// The `[calendar]` table: `[[calendar.accounts]]`, each `name` and `folder` (a vdir folder; a
/// relative path is read from the working folder, as `IRIS_MAILDIR` is). A misspelt key is
/// refused, not ignored.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CalendarSettings {
    /// Accounts in order.
    #[serde(default)]
    pub accounts: Vec<iris_calendar::AccountConfig>,
}

/// The `[files]` table: `[[files.roots]]`, each `name` and `path` (a folder; a relative path is
/// read from the working folder). A misspelt key is refused, not ignored.
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FilesSettings {
    /// Roots in order.
    #[serde(default)]
    pub roots: Vec<iris_files::RootConfig>,
}

/// One upstream MCP server of `[[mcp.upstreams]]` (the gateway, `crate::mcp`): run over stdio
/// by `command`, or reached over streamable HTTP at `url` (exactly one of them).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSetting {
    /// Its name: the `/mcp/{name}` path agents connect to, and the prefix of its tools on cards
    /// (`files.write_file`). Lower-case letters, digits, `-` and `_`.
    pub name: String,
    /// Program and arguments, started by `iris serve` in a process group of its own.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Its streamable HTTP endpoint (`http://127.0.0.1:9000/mcp`).
    #[serde(default)]
    pub url: Option<String>,
    /// IRIS's manifest for its tools (`iris_core::mcp::UpstreamManifest`); a relative path is
    /// read from the folder of `iris.toml`.
    pub manifest: PathBuf,
}

/// The `[mcp]` table (a misspelt key, e.g. `[[mcp.upstream]]`, is refused, not ignored).
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    /// The upstreams, each served at `/mcp/{name}`.
    #[serde(default)]
    pub upstreams: Vec<UpstreamSetting>,
    /// `max_waiting_per_agent`: the most cards one agent may have waiting for the owner at
    /// once (default `iris_core::approvals::MAX_WAITING_PER_AGENT`, 20; 0 is refused). A new
    /// call beyond it is answered with a refusal and makes no card.
    #[serde(default)]
    pub max_waiting_per_agent: Option<std::num::NonZeroU32>,
    /// `[mcp.iris]`: IRIS's own tools offered to MCP clients at `/mcp/iris` (none by default).
    #[serde(default)]
    pub iris: Option<OwnToolsSetting>,
}

/// `[mcp.iris]`: which of IRIS's own tools agents may call at `/mcp/iris`, with the same `agent`
/// tokens, holds and cards as the gateway's upstreams. Nothing is offered unless listed (so no
/// agent reads mail unless the owner lists `search_inbox`).
#[derive(Debug, Clone, Deserialize, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OwnToolsSetting {
    /// The tools' names, e.g. `["list_files", "quarantine_files"]`.
    #[serde(default)]
    pub tools: Vec<String>,
}

/// Every setting of DESIGN §7.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Settings {
    /// `IRIS_DATABASE_URL`: `sqlite://PATH` (default `sqlite://data/iris.db`) or `postgres://…`.
    #[serde(default = "default_database_url")]
    pub database_url: String,
    /// `IRIS_BIND`: listen address (default `127.0.0.1:3000`; port 0 picks a free one).
    #[serde(default = "default_bind")]
    pub bind: String,
    /// `IRIS_MAILDIR`: one Maildir account (named `maildir`), before the `[[email.accounts]]`.
    #[serde(default)]
    pub maildir: Option<PathBuf>,
    /// `IRIS_PUBLIC_URL`: the address the owner's browsers open (e.g. `https://iris.example.org`);
    /// pairing links are made on it, and with `https://` the session cookie is `Secure`.
    /// Default `http://` + `IRIS_BIND`.
    #[serde(default)]
    pub public_url: Option<String>,
    /// `IRIS_MODEL`: `openai:BASE_URL` or `scripted:PATH`.
    #[serde(default)]
    pub model: Option<String>,
    /// `IRIS_MODEL_NAME`.
    #[serde(default)]
    pub model_name: Option<String>,
    /// `IRIS_MODEL_API_KEY`.
    #[serde(default)]
    pub model_api_key: Option<String>,
    /// `IRIS_MODEL_STREAM` (default false): with `true`, the `openai:` adapter asks for a
    /// streamed answer (`"stream": true`) and assembles the chunks into the same turn.
    #[serde(default)]
    pub model_stream: bool,
    /// `IRIS_ESCALATION`: `off` (default), `shadow` (the judge's verdict on every `/api/chat`
    /// turn is recorded in the curator table, nothing acts) or `enforce` (recorded, and an
    /// `escalate` verdict re-runs the turn when the rules of DESIGN §2 "escalation" allow).
    #[serde(default)]
    pub escalation: EscalationMode,
    /// `IRIS_ESCALATION_MAX_HOPS` (default 1): at most this many re-runs per owner turn.
    #[serde(default = "default_escalation_max_hops")]
    pub escalation_max_hops: u32,
    /// `IRIS_EMAIL_DEFAULT_SENDER`.
    #[serde(default)]
    pub email_default_sender: Option<String>,
    /// `IRIS_APPROVALS_ENABLED` (default true). False refuses every approved-per-call call.
    #[serde(default = "default_true")]
    pub approvals_enabled: bool,
    /// `IRIS_DESTRUCTIVE_TTL_SECS` (default 3600, also for pinned writes).
    #[serde(default = "default_destructive_ttl")]
    pub destructive_ttl_secs: u64,
    /// `IRIS_EVALUATOR_TTL_SECS` (default 600).
    #[serde(default = "default_evaluator_ttl")]
    pub evaluator_ttl_secs: u64,
    /// `IRIS_EVALUATOR_RULES`: a YAML file of PostStep evaluator rules
    /// (`iris_core::evaluator::RuleEvaluator`); unset: no evaluator runs.
    #[serde(default)]
    pub evaluator_rules: Option<PathBuf>,
    /// `IRIS_SMTP_URL`.
    #[serde(default)]
    pub smtp_url: Option<String>,
    /// `IRIS_TELEGRAM_TOKEN`.
    #[serde(default)]
    pub telegram_token: Option<String>,
    /// `IRIS_TELEGRAM_CHAT_ID`: the owner's chat. A number (`4242`, `-1001234567890`) is read
    /// as its text: figment reads such an environment value as a number, not a string.
    #[serde(default, deserialize_with = "string_or_number")]
    pub telegram_chat_id: Option<String>,
    /// `IRIS_VAPID_SUBJECT`: Web Push's contact (RFC 8292 §2.1), `mailto:owner@example.org` or
    /// an `https:` URL; unset, Web Push is off (`crate::push`).
    #[serde(default)]
    pub vapid_subject: Option<String>,
    /// `IRIS_PASSKEY_REQUIRED`: which approvals need the owner's passkey, `never` (default),
    /// `destructive`, or `approvals` (destructive calls and pinned writes); anything else stops
    /// `iris serve` naming it (`iris_core::passkey::PasskeyPolicy`).
    #[serde(default)]
    pub passkey_required: Option<String>,
    /// `IRIS_TELEGRAM_API_URL`.
    #[serde(default)]
    pub telegram_api_url: Option<String>,
    /// `IRIS_SWEEP_SECS`: how often the expiry and resume sweeps run (default 15).
    #[serde(default = "default_sweep_secs")]
    pub sweep_secs: u64,
    /// `IRIS_MAIL_SYNC_SECS`: how often new mail is synced into the local store after start-up
    /// (default 60; 0 syncs only at start-up).
    #[serde(default = "default_mail_sync_secs")]
    pub mail_sync_secs: u64,
    /// `IRIS_SQLITE_SYNCHRONOUS`: `full` (default: every commit survives a power cut) or
    /// `normal` (in WAL mode a commit survives a crash of the process, not a power cut, which
    /// can lose the last commits). Ignored on PostgreSQL.
    #[serde(default = "default_sqlite_synchronous")]
    pub sqlite_synchronous: String,
    /// `IRIS_MODEL_TIMEOUT_SECS` (default 120): a model call that has not answered (or, when
    /// streaming, sent its next chunk) within this many seconds is a failed call.
    #[serde(default = "default_model_timeout_secs")]
    pub model_timeout_secs: u64,
    /// `[mcp]`: the MCP gateway's upstream servers (`[[mcp.upstreams]]`, none by default) and
    /// its cap on waiting cards per agent.
    #[serde(default)]
    pub mcp: McpSettings,
    /// `IRIS_MCP_HOLD_SECS` (default 50, under the usual 60-second client timeout): how long an
    /// agent's gated call is held waiting for the owner before it answers "waiting, call again".
    #[serde(default = "default_mcp_hold_secs")]
    pub mcp_hold_secs: u64,
    /// The folder of the `iris.toml` that was read (relative upstream manifests are read from
    /// it); the working folder when there is none.
    #[serde(skip)]
    pub config_dir: PathBuf,
    /// `IRIS_LEASE_SECS` (default 30): how long a server's lease on a resume job lasts without a
    /// heartbeat; another server takes the job over after that (DESIGN §9).
    #[serde(default = "default_lease_secs")]
    pub lease_secs: u32,
    /// `IRIS_EXECUTE_TIMEOUT_SECS` (default 120): the deadline of one approved call's side
    /// effect (mail, SMTP, an MCP upstream, a file); one without an answer by then is recorded
    /// `unknown` and never run again (docs/liveness.md).
    #[serde(default = "default_execute_timeout_secs")]
    pub execute_timeout_secs: u64,
    /// `IRIS_EXECUTE_GRACE_SECS` (default 900): an approved call that has not started by its
    /// card's expiry plus this many seconds is not run at all (`failed`, "not run: it could not
    /// start before …"): no mail sent hours late (docs/liveness.md).
    #[serde(default = "default_execute_grace_secs")]
    pub execute_grace_secs: u64,
    /// `[email]` accounts.
    #[serde(default)]
    pub email: EmailSettings,
    /// `[calendar]` accounts (none by default: the calendar tools are then not offered).
    #[serde(default)]
    pub calendar: CalendarSettings,
    /// `[files]` roots (none by default: the files tools are then not offered).
    #[serde(default)]
    pub files: FilesSettings,
}

/// An optional text setting trimmed, `None` when unset or blank: an environment variable set to
/// an empty string (or a key left blank in `iris.toml`) counts as not set.
pub fn non_blank(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// An optional setting given as text or as a whole number, kept as text.
fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Text(String),
        Signed(i64),
        Unsigned(u64),
        // Kept as its text so the setting's own check names it ("12.5" is no chat id), rather
        // than the whole settings load failing with serde's "did not match any variant".
        Fraction(f64),
    }
    Ok(Option::<Given>::deserialize(d)?.map(|g| match g {
        Given::Text(s) => s,
        Given::Signed(n) => n.to_string(),
        Given::Unsigned(n) => n.to_string(),
        Given::Fraction(n) => n.to_string(),
    }))
}

fn default_mail_sync_secs() -> u64 {
    60
}
fn default_database_url() -> String {
    "sqlite://data/iris.db".into()
}
fn default_bind() -> String {
    "127.0.0.1:3000".into()
}
fn default_true() -> bool {
    true
}
fn default_destructive_ttl() -> u64 {
    3600
}
fn default_evaluator_ttl() -> u64 {
    600
}
fn default_escalation_max_hops() -> u32 {
    iris_core::escalation::DEFAULT_MAX_HOPS
}
fn default_sweep_secs() -> u64 {
    15
}
fn default_sqlite_synchronous() -> String {
    "full".into()
}
fn default_model_timeout_secs() -> u64 {
    120
}
fn default_lease_secs() -> u32 {
    30
}
fn default_execute_timeout_secs() -> u64 {
    120
}
fn default_execute_grace_secs() -> u64 {
    900
}
fn default_mcp_hold_secs() -> u64 {
    50
}

impl Settings {
    /// Every setting at its default (no file, no environment): for building a server in
    /// process.
    pub fn defaults() -> Settings {
        Figment::new()
            .extract()
            .expect("every setting has a default")
    }

    /// Loads `iris.toml` (from `IRIS_CONFIG` or `./iris.toml`, if it exists), then `IRIS_*`.
    ///
    /// # Errors
    /// A figment error naming the bad key and value.
    pub fn load() -> Result<Settings, Box<figment::Error>> {
        let path = std::env::var("IRIS_CONFIG").unwrap_or_else(|_| "iris.toml".into());
        let config_dir = std::path::Path::new(&path)
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        let mut settings: Settings = Figment::new()
            .merge(Toml::file(path))
            .merge(Env::prefixed("IRIS_").ignore(&["CONFIG", "URL", "TOKEN"]))
            .extract()
            .map_err(Box::new)?;
        settings.config_dir = config_dir;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::result_large_err)]
    fn a_fractional_chat_id_is_kept_as_text_for_its_own_check() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("IRIS_TELEGRAM_CHAT_ID", "12.5");
            let s = Settings::load().map_err(|e| *e)?;
            assert_eq!(s.telegram_chat_id.as_deref(), Some("12.5"));
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)]
    fn evaluator_rules_path_from_the_environment() {
        figment::Jail::expect_with(|jail| {
            assert_eq!(Settings::load().map_err(|e| *e)?.evaluator_rules, None);
            jail.set_env("IRIS_EVALUATOR_RULES", "rules/evaluators.yaml");
            let s = Settings::load().map_err(|e| *e)?;
            assert_eq!(
                s.evaluator_rules,
                Some(PathBuf::from("rules/evaluators.yaml"))
            );
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)]
    fn file_then_environment() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "iris.toml",
                "bind = \"127.0.0.1:4000\"\ndestructive_ttl_secs = 60\n[[email.accounts]]\nname = \"personal\"\naddress = \"owner@example.org\"\nkind = \"imap\"\nhost = \"127.0.0.1\"\nport = 143\nuser = \"owner@example.org\"\npassword_env = \"IRIS_PERSONAL_PASSWORD\"\n",
            )?;
            jail.set_env("IRIS_DESTRUCTIVE_TTL_SECS", "120");
            jail.set_env("IRIS_APPROVALS_ENABLED", "false");
            let s = Settings::load().map_err(|e| *e)?;
            assert_eq!(s.bind, "127.0.0.1:4000");
            assert_eq!(s.destructive_ttl_secs, 120);
            assert!(!s.approvals_enabled);
            assert_eq!(s.evaluator_ttl_secs, 600);
            assert_eq!(s.email.accounts[0].port, Some(143));
            assert_eq!(s.database_url, "sqlite://data/iris.db");
            assert!(!s.model_stream);
            assert_eq!(s.escalation, EscalationMode::Off);
            assert_eq!(s.escalation_max_hops, 1);
            assert_eq!(s.sqlite_synchronous, "full");
            assert_eq!(s.model_timeout_secs, 120);
            assert_eq!(s.lease_secs, 30);
            assert_eq!(s.execute_timeout_secs, 120);
            assert_eq!(s.execute_grace_secs, 900);
            jail.set_env("IRIS_MODEL_STREAM", "true");
            jail.set_env("IRIS_SQLITE_SYNCHRONOUS", "normal");
            jail.set_env("IRIS_MODEL_TIMEOUT_SECS", "5");
            jail.set_env("IRIS_ESCALATION", "shadow");
            jail.set_env("IRIS_ESCALATION_MAX_HOPS", "2");
            let s = Settings::load().map_err(|e| *e)?;
            assert!(s.model_stream);
            assert_eq!(s.escalation, EscalationMode::Shadow);
            assert_eq!(s.escalation_max_hops, 2);
            assert_eq!(s.sqlite_synchronous, "normal");
            assert_eq!(s.model_timeout_secs, 5);
            jail.set_env("IRIS_ESCALATION", "loud");
            assert!(Settings::load().is_err());
            Ok(())
        });
    }
}
