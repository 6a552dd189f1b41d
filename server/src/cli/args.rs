//! The `iris` command line as clap reads it: [`Cli`] and its subcommands ([`Command`]).
//! `crate::run` dispatches them; the subcommands' own arguments live with their code in
//! `cli.rs` and `cli/at_server.rs`.

use clap::{Parser, Subcommand};

use super::at_server::{AuditCommand, PasskeysCommand};
use super::{ApprovalsCommand, ChatArgs, DevicesCommand, EXIT_CODES_HELP};

/// IRIS approvals: destructive calls run only after the owner approves that exact call.
#[derive(Parser)]
#[command(name = "iris", version, about)]
pub struct Cli {
    #[command(subcommand)]
    /// The subcommand.
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
pub enum Command {
    /// Run the server (IRIS_BIND, default 127.0.0.1:3000).
    Serve {
        /// Load the demo mailbox and the demo model.
        #[arg(long)]
        demo: bool,
    },
    /// Paired devices (talks to the database directly).
    Devices {
        /// What to do with devices.
        #[command(subcommand)]
        command: DevicesCommand,
    },
    /// Approvals over HTTP (IRIS_URL, IRIS_TOKEN).
    #[command(after_help = EXIT_CODES_HELP)]
    Approvals {
        /// What to do with approvals.
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
    /// One chat turn over HTTP (IRIS_URL, IRIS_TOKEN); prints the reply and any card it waits on.
    #[command(after_help = EXIT_CODES_HELP)]
    Chat(ChatArgs),
    /// A one-time pairing link for a browser: open it within 10 minutes to pair that browser
    /// as a device with this scope (talks to the database directly; the link is made on
    /// IRIS_PUBLIC_URL, default http:// + IRIS_BIND). The link is the last line.
    Pair {
        /// read (sees cards, never answers) or control (may answer cards and chat).
        #[arg(long, value_parser = ["read", "control"])]
        scope: String,
    },
    /// The owner's passkeys (talks to the database directly): list them, or remove one without
    /// a proof (the recovery path when a passkey is lost).
    Passkeys {
        /// What to do with passkeys.
        #[command(subcommand)]
        command: PasskeysCommand,
    },
    /// The audit log (talks to the database directly): `verify ID` checks the passkey that
    /// approved a card again and says which passkey approved which call.
    Audit {
        /// What to do.
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// A stdio MCP server for an agent that spawns its servers (Claude Desktop, Cursor),
    /// bridged to the gateway's upstream NAME at IRIS_URL/mcp/NAME with IRIS_TOKEN (an agent
    /// device's token, `iris devices add --name NAME --scope agent`).
    Mcp {
        /// The upstream's name (`[[mcp.upstreams]] name`).
        name: String,
    },
}
