//! The `iris` binary (DESIGN §7): `iris serve [--demo]` runs the server; `iris devices …` and
//! `iris pair` talk to the database directly, for the person at the server; `iris approvals …`
//! and `iris chat` talk to a running server over HTTP with `IRIS_URL` and `IRIS_TOKEN`. The
//! server itself is the library (`iris::build`, `iris::app`).

use clap::Parser;

/// mimalloc instead of the system allocator: a consent cycle allocates many small, short-lived
/// values (rows, JSON, SQL), where glibc's malloc showed as a tenth of the cycle's time and
/// most of its latency tail (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sqlx=warn,tower_http=warn,rmcp=warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    iris::run(iris::Cli::parse()).await
}
