//! The MCP gateway's test parts: the official Python MCP SDK as the agent
//! (`server/tests/mcp/agent.py`), the official filesystem server and a notes server made with
//! the Python SDK as upstreams, and servers that put them behind `/mcp/{name}`: in process
//! ([`app`]) or worlds whose `iris.toml` says so ([`world`]). The agent's helpers take the
//! server's address (`http://127.0.0.1:PORT`).

use std::path::{Path, PathBuf};

use iris::config::UpstreamSetting;
use serde_json::{json, Value};

use super::app::Build;
use super::{Client, TestApp, World};

/// The official filesystem server, installed with the end-to-end tests' packages.
pub fn filesystem_server() -> PathBuf {
    let bin = super::server_dir().join("../end2end/node_modules/.bin/mcp-server-filesystem");
    assert!(
        bin.exists(),
        "{} is missing: scripts/setup.sh installs it (npm ci in end2end/)",
        bin.display()
    );
    bin
}

/// A script of `server/tests/mcp/`.
pub fn script(name: &str) -> PathBuf {
    super::server_dir().join("tests/mcp").join(name)
}

/// IRIS's manifest for the filesystem server (the repository's example).
pub fn filesystem_manifest() -> PathBuf {
    super::server_dir().join("../examples/mcp/filesystem.yaml")
}

/// The model's address for servers that never ask it: nothing answers there.
const NO_MODEL: &str = "http://127.0.0.1:9/v1";

/// A `notes/` folder in `dir` (its real path: the filesystem server compares real paths)
/// holding `plan.md` = "v1".
fn notes_folder(dir: &Path) -> PathBuf {
    let notes = dir.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let notes = notes.canonicalize().unwrap();
    std::fs::write(notes.join("plan.md"), "v1").unwrap();
    notes
}

/// A world with a `notes/` folder (real path: the filesystem server compares real paths)
/// holding `plan.md` = "v1", `IRIS_MCP_HOLD_SECS` = `hold_secs` and `toml` as its `iris.toml`
/// (`{notes}` in it replaced by the folder).
pub fn world(hold_secs: u64, toml: &str) -> (World, PathBuf) {
    let mut world = World::new(NO_MODEL);
    let notes = notes_folder(world.dir.path());
    let toml = toml.replace("{notes}", &notes.display().to_string());
    std::fs::write(world.dir.path().join("iris.toml"), toml).unwrap();
    world
        .env
        .push(("IRIS_MCP_HOLD_SECS".into(), hold_secs.to_string()));
    (world, notes)
}

/// A server in process, its background work running (the jobs that execute approved calls),
/// with a `notes/` folder as [`world`] makes it, `IRIS_MCP_HOLD_SECS` = `hold_secs`, the
/// upstream `upstream` makes for that folder and whatever else `configure` sets. The server, the
/// address it listens on and the folder.
pub async fn app(
    hold_secs: u64,
    upstream: impl FnOnce(&Path) -> UpstreamSetting,
    configure: impl FnOnce(Build) -> Build,
) -> (TestApp, String, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let notes = notes_folder(dir.path());
    let build = TestApp::with_model_url(NO_MODEL)
        .in_dir(dir)
        .mcp_hold_secs(hold_secs)
        .mcp_upstream(upstream(&notes))
        .background();
    let app = configure(build).start().await;
    let url = app.listen().await;
    (app, url, notes)
}

/// The filesystem server on `notes` as `files`.
pub fn files_upstream_on(notes: &Path) -> UpstreamSetting {
    UpstreamSetting {
        name: "files".into(),
        command: Some(vec![
            filesystem_server().display().to_string(),
            notes.display().to_string(),
        ]),
        url: None,
        manifest: filesystem_manifest(),
    }
}

/// `upstream` as an `[[mcp.upstreams]]` table of `iris.toml`.
pub fn upstream_toml(upstream: &UpstreamSetting) -> String {
    let mut toml = format!("[[mcp.upstreams]]\nname = {:?}\n", upstream.name);
    if let Some(command) = &upstream.command {
        toml += &format!("command = {command:?}\n");
    }
    if let Some(url) = &upstream.url {
        toml += &format!("url = {url:?}\n");
    }
    toml + &format!("manifest = {:?}\n", upstream.manifest.display().to_string())
}

/// `[[mcp.upstreams]]` for the filesystem server on `{notes}` as `files`.
pub fn files_upstream() -> String {
    upstream_toml(&files_upstream_on(Path::new("{notes}")))
}

/// Runs the Python agent on `/mcp/{upstream}` of the server at `url` over streamable HTTP with
/// `steps`; one JSON answer per step.
pub async fn agent(url: &str, upstream: &str, token: &str, steps: Value) -> Vec<Value> {
    let out = tokio::process::Command::new("python3")
        .arg(script("agent.py"))
        .args(["http", &format!("{url}/mcp/{upstream}"), token])
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

/// One step on `/mcp/{upstream}` of the server at `url`.
pub async fn one(url: &str, upstream: &str, token: &str, step: Value) -> Value {
    agent(url, upstream, token, json!([step])).await.remove(0)
}

/// A JSON client of the server at `url`.
pub fn client(url: &str) -> Client {
    Client {
        http: reqwest::Client::new(),
        url: url.to_owned(),
    }
}

/// A row of the server at `url` as `token` reads it.
pub async fn row(url: &str, token: &str, id: &str) -> Value {
    client(url)
        .get(&format!("/governance/approvals/{id}"), token)
        .await
}

/// The owner's answer to `id` on the server at `url`; the HTTP status.
pub async fn answer(url: &str, owner: &str, id: &str, body: Value) -> reqwest::StatusCode {
    let (status, body) = client(url)
        .post(
            &format!("/governance/approvals/{id}/respond"),
            Some(owner),
            body,
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    status
}
