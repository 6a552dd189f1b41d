//! `iris passkeys list|remove` and `iris audit export|verify`: run at the server against its
//! database (like `iris devices`), the recovery path when the owner's passkeys are lost and the
//! later check of who approved what (ADR-0118 decision 4, docs/adr/0124-signed-consent.md);
//! `iris audit verify --bundle` needs no database.

use anyhow::{bail, Context};
use chrono::Utc;
use clap::Subcommand;
use iris_core::ports::{PasskeyChange, PasskeyStore};

use crate::config::Settings;
use crate::passkeys::bundle::{self, BundleVerdict};
use crate::passkeys::key::CredentialKey;
use crate::passkeys::verify::verify;

/// `iris passkeys …`.
#[derive(Subcommand)]
pub enum PasskeysCommand {
    /// List the owner's passkeys: id, name, added (when, by which device), last used, and the
    /// key's fingerprint (what `iris audit verify --credential` pins).
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
    /// Print an approval's consent bundle as JSON (at the server, from its database): the
    /// request's terms, the decision, the call that ran, and the passkey's public key,
    /// fingerprint, authenticator data, client data and signature (`"passkey": null` when no
    /// passkey approved it). A bundle holds personal data: subjects, addresses, file names.
    Export {
        /// The approval id.
        id: String,
        /// Write the bundle to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
    },
    /// Check that an owner's passkey signed exactly this call and decision: from the database
    /// with ID, or from a bundle file with --bundle (no database or server needed). Exits 0
    /// when the signature covers the call that ran and the decision, 11 when no passkey signed
    /// it, 12 when anything does not match; prints which fields are signed and which are only
    /// recorded.
    #[command(group(clap::ArgGroup::new("what").required(true).args(["id", "bundle"])))]
    Verify {
        /// The approval id (checked from the server's database, its key pinned by the stored
        /// passkey).
        id: Option<String>,
        /// A bundle from `iris audit export`.
        #[arg(long, value_name = "FILE")]
        bundle: Option<std::path::PathBuf>,
        /// The fingerprint the passkey must have (`SHA256:…`, as `iris passkeys list` shows
        /// it). A bundle checked without it fails (12): its own key proves nothing about whose
        /// passkey signed. With ID, the stored passkey's fingerprint is used when absent.
        #[arg(long, value_name = "FINGERPRINT")]
        credential: Option<String>,
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
                outln!("no passkeys (register one on the Devices page of the web app)");
            }
            for p in list {
                let removed = p
                    .removed_at
                    .map(|t| format!("\tremoved {}", iris_core::wire::when_utc(t)))
                    .unwrap_or_default();
                // The fingerprint `iris audit verify --credential` pins.
                let fingerprint = CredentialKey::from_stored(&p.key)
                    .map(|(key, _)| key.fingerprint())
                    .unwrap_or_else(|why| format!("(no fingerprint: {why})"));
                outln!(
                    "{}\t{}\tadded {} by {}\tlast used {}\tkey {fingerprint}{removed}",
                    p.id,
                    super::render::printable(&p.name),
                    iris_core::wire::when_utc(p.created_at),
                    p.added_by,
                    p.last_used_at
                        .map(iris_core::wire::when_utc)
                        .unwrap_or_else(|| "never".into())
                );
            }
        }
        PasskeysCommand::Remove { id } => {
            match store
                .remove_passkey(&id, None, "iris passkeys remove", Utc::now())
                .await?
            {
                PasskeyChange::Done => outln!("removed passkey `{id}`"),
                PasskeyChange::Refused(_) => {
                    bail!("no live passkey has the id `{id}` (see `iris passkeys list`)")
                }
            }
        }
    }
    Ok(())
}

/// Runs `iris audit export|verify`. `verify` ends the process with its verdict's exit code
/// (0 signed and matching, 11 not signed, 12 mismatch).
///
/// # Errors
/// When the database cannot be opened, the approval does not exist, or the bundle cannot be
/// read.
pub async fn audit(command: AuditCommand) -> anyhow::Result<()> {
    match command {
        AuditCommand::Export { id, out } => {
            let store = server_store().await?;
            let bundle = bundle::export(&store, &id).await?;
            let text = serde_json::to_string_pretty(&bundle)? + "\n";
            match out {
                Some(path) => {
                    std::fs::write(&path, text)
                        .with_context(|| format!("writing {}", path.display()))?;
                    eprintln!(
                        "wrote the consent bundle of approval `{id}` to {} (it holds personal \
                         data: subjects, addresses)",
                        path.display()
                    );
                }
                None => out!("{text}"),
            }
            Ok(())
        }
        AuditCommand::Verify {
            id,
            bundle: file,
            credential,
        } => {
            let verdict = match (id, file) {
                (_, Some(path)) => bundle::verify(&bundle::read(&path)?, credential.as_deref()),
                (Some(id), None) => {
                    let store = server_store().await?;
                    verify(&store, &id, credential.as_deref()).await?
                }
                (None, None) => bail!("give an approval id or --bundle FILE"),
            };
            match &verdict {
                BundleVerdict::Verified(lines) => lines.iter().for_each(|l| outln!("{l}")),
                BundleVerdict::NotSigned(why) => outln!("not signed: {why}"),
                BundleVerdict::Mismatch(why) => outln!("MISMATCH: {why}"),
            }
            std::process::exit(verdict.exit_code())
        }
    }
}
