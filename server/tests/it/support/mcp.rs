//! The MCP gateway's test parts: the official Python MCP SDK as the agent
//! (`server/tests/mcp/agent.py`), the official filesystem server and a notes server made with
//! the Python SDK as upstreams, and worlds whose `iris.toml` puts them behind `/mcp/{name}`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Iris, World};

/// The official filesystem server, installed with the end-to-end tests' packages.
pub fn filesystem_server() -> PathBuf {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../end2end/node_modules/.bin/mcp-server-filesystem");
    assert!(
        bin.exists(),
        "{} is missing: scripts/setup.sh installs it (npm ci in end2end/)",
        bin.display()
    );
    bin
}

/// A script of `server/tests/mcp/`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp")
        .join(name)
}

/// IRIS's manifest for the filesystem server (the repository's example).
pub fn filesystem_manifest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mcp/filesystem.yaml")
}

/// A world with a `notes/` folder (real path: the filesystem server compares real paths)
/// holding `plan.md` = "v1", `IRIS_MCP_HOLD_SECS` = `hold_secs` and `toml` as its `iris.toml`
/// (`{notes}` in it replaced by the folder).
pub fn world(hold_secs: u64, toml: &str) -> (World, PathBuf) {
    let mut world = World::new("http://127.0.0.1:9/v1");
    let notes = world.dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let notes = notes.canonicalize().unwrap();
    std::fs::write(notes.join("plan.md"), "v1").unwrap();
    let toml = toml.replace("{notes}", &notes.display().to_string());
    std::fs::write(world.dir.path().join("iris.toml"), toml).unwrap();
    world
        .env
        .push(("IRIS_MCP_HOLD_SECS".into(), hold_secs.to_string()));
    (world, notes)
}

/// `[[mcp.upstreams]]` for the filesystem server on `{notes}` as `files`.
pub fn files_upstream() -> String {
    format!(
        "[[mcp.upstreams]]\nname = \"files\"\ncommand = [{:?}, \"{{notes}}\"]\nmanifest = {:?}\n",
        filesystem_server().display().to_string(),
        filesystem_manifest().display().to_string(),
    )
}

/// Runs the Python agent on `/mcp/{upstream}` over streamable HTTP with `steps`; one JSON
/// answer per step.
pub async fn agent(iris: &Iris, upstream: &str, token: &str, steps: Value) -> Vec<Value> {
    let out = tokio::process::Command::new("python3")
        .arg(script("agent.py"))
        .args(["http", &format!("{}/mcp/{upstream}", iris.url), token])
        .arg(steps.to_string())
        .output()
        .await
        .expect("python3 runs");
    answers(out)
}

/// The agent's answers (it must have succeeded).
pub fn answers(out: std::process::Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "the agent failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON answer per line"))
        .collect()
}

/// One step on `/mcp/{upstream}`.
pub async fn one(iris: &Iris, upstream: &str, token: &str, step: Value) -> Value {
    agent(iris, upstream, token, json!([step])).await.remove(0)
}

/// A row as `token` reads it.
pub async fn row(iris: &Iris, token: &str, id: &str) -> Value {
    iris.client()
        .get(&format!("/governance/approvals/{id}"), token)
        .await
}

/// The owner's answer to `id`; the HTTP status.
pub async fn answer(iris: &Iris, owner: &str, id: &str, body: Value) -> reqwest::StatusCode {
    let (status, body) = iris
        .client()
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(owner),
            body,
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    status
}
