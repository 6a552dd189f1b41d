//! An MCP upstream over stdio (the gateway's client side, `iris::mcp::upstream`) against the
//! official filesystem server (npm `@modelcontextprotocol/server-filesystem`, installed into
//! `end2end/node_modules` by `scripts/setup.sh`) on a temporary folder, with IRIS's manifest
//! `examples/mcp/filesystem.yaml`: every declared tool is offered by the server; a read returns
//! the file; arguments that do not fit the server's own `inputSchema` and undeclared tools are
//! refused before anything is called; a manifest declaring a tool the server lacks is refused
//! at connection.

use iris::mcp::upstream::{Upstream, UpstreamError};
use iris_core::mcp::UpstreamManifest;
use serde_json::json;

fn server_command(root: &std::path::Path) -> Vec<String> {
    let bin =
        crate::support::server_dir().join("../end2end/node_modules/.bin/mcp-server-filesystem");
    assert!(
        bin.exists(),
        "{} is missing: scripts/setup.sh installs it (npm ci in end2end/)",
        bin.display()
    );
    vec![
        bin.display().to_string(),
        root.canonicalize().unwrap().display().to_string(),
    ]
}

fn manifest() -> UpstreamManifest {
    UpstreamManifest::from_yaml(include_str!("../../../examples/mcp/filesystem.yaml")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filesystem_server_offers_what_the_manifest_declares_and_reads_pass() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("plan.md"), "Thursday works.\n").unwrap();
    let upstream = Upstream::stdio(manifest(), &server_command(&root))
        .await
        .expect("the upstream starts and offers every declared tool");

    let path = root.join("plan.md").display().to_string();
    let read = upstream
        .call("read_text_file", &json!({"path": path}))
        .await
        .unwrap();
    assert!(read.to_string().contains("Thursday works."), "{read}");

    // The server's own schema: `path` is required.
    let bad = upstream.check_args("write_file", &json!({"content": "x"}));
    assert!(
        matches!(bad, Err(UpstreamError::BadArguments { .. })),
        "{bad:?}"
    );
    // Not declared: never called.
    let undeclared = upstream
        .call("delete_everything", &json!({}))
        .await
        .unwrap_err();
    assert!(
        matches!(undeclared, UpstreamError::Undeclared(_)),
        "{undeclared}"
    );
    assert!(upstream.tool("write_file").unwrap().card.is_some());
    assert_eq!(
        std::fs::read_to_string(root.join("plan.md")).unwrap(),
        "Thursday works.\n",
        "nothing wrote"
    );
    upstream.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manifest_declaring_a_tool_the_server_lacks_is_refused_at_connection() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = UpstreamManifest::from_yaml(
        "upstream: files\ntools:\n  - {name: read_text_file, effect: read}\n  - {name: format_disk, effect: read}\n",
    )
    .unwrap();
    let refused = Upstream::stdio(manifest, &server_command(dir.path()))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(&refused, UpstreamError::Missing { tool, .. } if tool == "format_disk"),
        "{refused}"
    );
    let start = Upstream::stdio(manifest_one(), &["/nonexistent/mcp-server".to_string()])
        .await
        .err()
        .expect("refused");
    assert!(matches!(start, UpstreamError::Start { .. }), "{start}");
}

fn manifest_one() -> UpstreamManifest {
    UpstreamManifest::from_yaml("upstream: x\ntools:\n  - {name: a, effect: read}\n").unwrap()
}
