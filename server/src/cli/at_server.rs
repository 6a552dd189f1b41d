//! `iris passkeys list|remove` and `iris audit verify`: run at the server against its database
//! (like `iris devices`), the recovery path when the owner's passkeys are lost and the later
//! check of who approved what (ADR-0118 decision 4).

use anyhow::{bail, Context};
use chrono::Utc;
use clap::Subcommand;
use iris_core::ports::{PasskeyChange, PasskeyStore};

use crate::config::Settings;
use crate::passkeys::verify::{verify, Verdict};
use crate::passkeys::Passkeys;

/// `iris passkeys …`.
#[derive(Subcommand)]
pub enum PasskeysCommand {
    /// List the owner's passkeys: id, name, added (when, by which device), last used.
    List {
        /// Also list removed passkeys (kept so old decisions can still be verified).
        #[arg(long)]
        all: bool,
    },
    /// Remove a passkey by id without a proof from another (the recovery path: run it at the
    /// server when a passkey is lost). Its row stays for `iris audit verify`.
    Remove {
        /// The passkey's id (from `iris passkeys list`).
        id: String,
    },
}

/// `iris audit …`.
#[derive(Subcommand)]
pub enum AuditCommand {
    /// Check the passkey of an approval's decision again from its audit entry (the signature
    /// against the challenge recorded for that approval and call hash, and the passkey's stored
    /// public key), and print which passkey approved which call. Exits 1 when it does not verify.
    Verify {
        /// The approval id.
        id: String,
    },
}

/// The server's database for a command that reads it: refused when `IRIS_DATABASE_URL` names
/// a SQLite file that does not exist (a read would make an empty one and say "nothing here"
/// about the wrong database); the one read is named on stderr.
async fn server_store() -> anyhow::Result<iris_store::Store> {
    let settings = Settings::load().context("reading settings (iris.toml, IRIS_*)")?;
    let url = &settings.database_url;
    if let Some(path) = url.strip_prefix("sqlite://") {
        let path = path.split('?').next().unwrap_or(path);
        if !std::path::Path::new(path).exists() {
            bail!(
                "no database at {path} (IRIS_DATABASE_URL is {url}): run this where the server \
                 keeps its data, with the server's IRIS_DATABASE_URL (the demo's is \
                 sqlite://data/demo.db)"
            );
        }
    }
    eprintln!("database: {url}");
    super::open_store().await
}

/// Runs `iris passkeys …`.
///
/// # Errors
/// When the database cannot be opened, or no live passkey has the id.
pub async fn passkeys(command: PasskeysCommand) -> anyhow::Result<()> {
    let store = server_store().await?;
    match command {
        PasskeysCommand::List { all } => {
            let list = store.passkeys(all).await?;
            if list.is_empty() {
                println!("no passkeys (register one on the Devices page of the web app)");
            }
            for p in list {
                let removed = p
                    .removed_at
                    .map(|t| format!("\tremoved {}", t.to_rfc3339()))
                    .unwrap_or_default();
                println!(
                    "{}\t{}\tadded {} by {}\tlast used {}{removed}",
                    p.id,
                    super::render::printable(&p.name),
                    p.created_at.to_rfc3339(),
                    p.added_by,
                    p.last_used_at
                        .map(|t| t.to_rfc3339())
                        .unwrap_or_else(|| "never".into())
                );
            }
        }
        PasskeysCommand::Remove { id } => {
            match store
                .remove_passkey(&id, None, "iris passkeys remove", Utc::now())
                .await?
            {
                PasskeyChange::Done => println!("removed passkey `{id}`"),
                PasskeyChange::Refused(_) => {
                    bail!("no live passkey has the id `{id}` (see `iris passkeys list`)")
                }
            }
        }
    }
    Ok(())
}

/// Runs `iris audit verify ID`.
///
/// # Errors
/// When the database cannot be opened, the approval does not exist, or its passkey does not
/// verify.
pub async fn audit(command: AuditCommand) -> anyhow::Result<()> {
    let AuditCommand::Verify { id } = command;
    let settings = Settings::load().context("reading settings (iris.toml, IRIS_*)")?;
    let passkeys = Passkeys::from_settings(&settings)?;
    let store = server_store().await?;
    match verify(&store, &passkeys, &id).await? {
        Verdict::Verified(line) | Verdict::NoPasskey(line) => {
            println!("{line}");
            Ok(())
        }
        Verdict::Failed(why) => bail!("{why}"),
    }
}
