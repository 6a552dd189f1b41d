//! CLI subcommands (DESIGN §7). `devices` talks to the database directly; `approvals` and `chat`
//! are a surface over HTTP (`IRIS_URL`, default `http://127.0.0.1:3000`, and `IRIS_TOKEN`), so
//! an answer from the CLI goes through the same `respond_to_approval` as every other surface.

use anyhow::{bail, Context};
use chrono::Utc;
use clap::Subcommand;
use iris_core::ports::{Device, DeviceStore, Scope};
use iris_core::wire::{Approval, ApprovalList, ChatResponse, ErrorBody, RespondResponse};
use iris_store::Store;
use serde_json::json;

use crate::auth;
use crate::config::Settings;

/// `iris devices …`.
#[derive(Subcommand)]
pub enum DevicesCommand {
    /// Add a device; its token is printed on the last line (shown once).
    Add {
        /// Unique name.
        #[arg(long)]
        name: String,
        /// read or control.
        #[arg(long, value_parser = ["read", "control"])]
        scope: String,
    },
    /// List live devices.
    List,
    /// Revoke a device by name.
    Revoke {
        /// The device's name.
        name: String,
    },
}

/// `iris approvals …`.
#[derive(Subcommand)]
pub enum ApprovalsCommand {
    /// List approvals.
    List {
        /// pending, approved, rejected or expired.
        #[arg(long)]
        status: Option<String>,
    },
    /// Show one approval in full.
    Show {
        /// Approval id.
        id: String,
    },
    /// Approve: runs exactly the pinned call, once.
    Approve {
        /// Approval id.
        id: String,
    },
    /// Reject: nothing runs.
    Reject {
        /// Approval id.
        id: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
}

async fn open_store() -> anyhow::Result<Store> {
    let settings = Settings::load().context("reading settings (iris.toml, IRIS_*)")?;
    Store::connect(&settings.database_url)
        .await
        .with_context(|| format!("opening the database {}", settings.database_url))
}

/// Runs `iris devices …`.
///
/// # Errors
/// When the database cannot be opened or the name is taken / unknown.
pub async fn devices(command: DevicesCommand) -> anyhow::Result<()> {
    let store = open_store().await?;
    match command {
        DevicesCommand::Add { name, scope } => {
            let name = name.trim().to_string();
            if name.is_empty() {
                bail!("a device needs a non-empty --name");
            }
            let scope = Scope::parse(&scope).context("scope must be read or control")?;
            let token = auth::new_token();
            store
                .add(
                    &Device {
                        name: name.clone(),
                        scope,
                        created_at: Utc::now(),
                        last_used_at: None,
                    },
                    &auth::token_hash(&token),
                )
                .await
                .with_context(|| format!("adding device `{name}` (is the name taken?)"))?;
            println!("added device `{name}` with scope {}", scope.as_str());
            println!("{token}");
        }
        DevicesCommand::List => {
            for d in store.list().await? {
                println!(
                    "{}\t{}\tadded {}\tlast used {}",
                    d.name,
                    d.scope.as_str(),
                    d.created_at.to_rfc3339(),
                    d.last_used_at
                        .map(|t| t.to_rfc3339())
                        .unwrap_or_else(|| "never".into())
                );
            }
        }
        DevicesCommand::Revoke { name } => {
            if !store.revoke(&name).await? {
                bail!("no live device is named `{name}`");
            }
            println!("revoked `{name}`");
        }
    }
    Ok(())
}

struct Remote {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Remote {
    fn from_env() -> anyhow::Result<Remote> {
        let base = std::env::var("IRIS_URL").unwrap_or_else(|_| "http://127.0.0.1:3000".into());
        let token = std::env::var("IRIS_TOKEN")
            .context("IRIS_TOKEN is not set: add a device with `iris devices add --name cli --scope control`")?;
        Ok(Remote {
            base: base.trim_end_matches('/').to_string(),
            token,
            http: reqwest::Client::new(),
        })
    }

    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> anyhow::Result<T> {
        let response = request
            .bearer_auth(&self.token)
            .header("x-iris-surface", "cli")
            .send()
            .await
            .with_context(|| format!("reaching {} (IRIS_URL)", self.base))?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            let message = serde_json::from_slice::<ErrorBody>(&body)
                .map(|e| e.error)
                .unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned());
            bail!("{} {}", status.as_u16(), message);
        }
        serde_json::from_slice(&body).context("the server's answer did not parse")
    }
}

fn print_row(a: &Approval) {
    println!(
        "{}\t{}\t{}\t{}\t{}",
        a.id,
        a.status.as_str(),
        a.execution.as_str(),
        a.card.title,
        a.expires_at.to_rfc3339()
    );
}

/// Runs `iris approvals …` over HTTP.
///
/// # Errors
/// When the server is unreachable or answers with an error (printed with its status).
pub async fn approvals(command: ApprovalsCommand) -> anyhow::Result<()> {
    let remote = Remote::from_env()?;
    match command {
        ApprovalsCommand::List { status } => {
            let mut url = format!("{}/governance/approvals", remote.base);
            if let Some(s) = status {
                url.push_str(&format!("?status={s}"));
            }
            let list: ApprovalList = remote.send(remote.http.get(url)).await?;
            for a in &list.approvals {
                print_row(a);
            }
        }
        ApprovalsCommand::Show { id } => {
            let a: Approval = remote
                .send(
                    remote
                        .http
                        .get(format!("{}/governance/approvals/{id}", remote.base)),
                )
                .await?;
            println!("{}", serde_json::to_string_pretty(&a)?);
        }
        ApprovalsCommand::Approve { id } => {
            let r: RespondResponse = remote
                .send(
                    remote
                        .http
                        .post(format!("{}/governance/approvals/{id}/respond", remote.base))
                        .json(&json!({"decision": "approve"})),
                )
                .await?;
            println!("approved: {}", r.approval.card.title);
        }
        ApprovalsCommand::Reject { id, reason } => {
            let r: RespondResponse = remote
                .send(
                    remote
                        .http
                        .post(format!("{}/governance/approvals/{id}/respond", remote.base))
                        .json(&json!({"decision": "reject", "reason": reason})),
                )
                .await?;
            println!("rejected: {}", r.approval.card.title);
        }
    }
    Ok(())
}

/// Runs `iris chat "MESSAGE"`: prints the reply (and the approval id when one is waiting).
///
/// # Errors
/// When the server is unreachable or answers with an error.
pub async fn chat(message: &str, conversation_id: Option<String>) -> anyhow::Result<()> {
    let remote = Remote::from_env()?;
    let r: ChatResponse = remote
        .send(
            remote
                .http
                .post(format!("{}/api/chat", remote.base))
                .json(&json!({"message": message, "conversation_id": conversation_id})),
        )
        .await?;
    println!("{}", r.reply);
    if let Some(id) = r.approval_id {
        println!("approval: {id}");
    }
    Ok(())
}
