//! The upstream manifest's rules, its card templates and the file previews.

use super::*;
use serde_json::json;

const FILESYSTEM: &str = include_str!("../../../../examples/mcp/filesystem.yaml");

#[test]
fn the_filesystem_example_loads_with_its_writes_gated_and_reads_not() {
    let m = UpstreamManifest::from_yaml(FILESYSTEM).unwrap();
    assert_eq!(m.upstream, "files");
    for gated in ["write_file", "edit_file", "move_file"] {
        let t = m.tool(gated).unwrap();
        assert_eq!(t.spec.effect, Effect::Destructive, "{gated}");
        assert!(t.spec.approved_per_call() && t.card.is_some(), "{gated}");
    }
    for read in [
        "read_text_file",
        "list_directory",
        "search_files",
        "get_file_info",
    ] {
        let t = m.tool(read).unwrap();
        assert_eq!(t.spec.effect, Effect::Read, "{read}");
        assert!(!t.spec.approved_per_call() && t.card.is_none(), "{read}");
    }
    let mkdir = m.tool("create_directory").unwrap();
    assert_eq!(mkdir.spec.effect, Effect::Write);
    assert!(!mkdir.spec.approved_per_call());
    assert!(m.tool("delete_everything").is_none());
    let write = m.tool("write_file").unwrap().card.as_ref().unwrap();
    assert_eq!(write.preview, Some(Preview::FileDiff));
}

#[test]
fn a_card_shows_what_executes_escaped_and_bounded() {
    let m = UpstreamManifest::from_yaml(FILESYSTEM).unwrap();
    let card = m.tool("write_file").unwrap().card.clone().unwrap();
    let args = json!({"path": "/notes/plan\u{202e}.md", "content": "x"});
    assert_eq!(
        fill(&card.title, &args, None),
        "Overwrite /notes/plan\\u{202e}.md"
    );
    assert_eq!(items(&card, &args).unwrap(), vec!["/notes/plan\u{202e}.md"]);
    let long = json!({"path": "a".repeat(500)});
    let filled = fill("{path}", &long, None);
    assert_eq!(filled.chars().count(), FILLED_CHARS + 1);
    assert!(filled.ends_with('…'));
    let moved = m.tool("move_file").unwrap().card.clone().unwrap();
    let args = json!({"source": "/a.md", "destination": "/b.md"});
    assert_eq!(fill(&moved.title, &args, None), "Move /a.md to /b.md");
    assert!(items(&moved, &json!({})).unwrap_err().contains("`source`"));
}

#[test]
fn the_plugin_rules_and_the_card_rules_refuse_with_the_tool_named() {
    let refused = |yaml: &str| UpstreamManifest::from_yaml(yaml).unwrap_err().to_string();
    let no_card = refused("upstream: u\ntools:\n  - {name: rm, effect: destructive}\n");
    assert!(
        no_card.contains("`rm`") && no_card.contains("no `card`"),
        "{no_card}"
    );
    let read_card = refused(
        "upstream: u\ntools:\n  - name: cat\n    effect: read\n    card: {title: t, action: a, items: p}\n",
    );
    assert!(read_card.contains("not gated"), "{read_card}");
    let confirm =
        refused("upstream: u\ntools:\n  - {name: rm, effect: destructive, confirm: never}\n");
    assert!(confirm.contains("rm"), "{confirm}");
    let template = refused(
        "upstream: u\ntools:\n  - name: rm\n    effect: destructive\n    card: {title: \"Delete {path\", action: a, items: path}\n",
    );
    assert!(template.contains("title"), "{template}");
    let unknown = refused("upstream: u\ntools:\n  - {name: rm, effect: destroy}\n");
    assert!(unknown.contains("not valid"), "{unknown}");
    let pinned = UpstreamManifest::from_yaml(
        "upstream: u\ntools:\n  - name: post\n    effect: write\n    approval: pinned\n    card: {title: \"Post to {channel}\", action: Post, items: channel}\n",
    )
    .unwrap();
    assert!(pinned.tool("post").unwrap().spec.approved_per_call());
}

#[test]
fn a_card_naming_an_argument_the_server_lacks_is_refused() {
    let m = UpstreamManifest::from_yaml(FILESYSTEM).unwrap();
    let schema = json!({"type": "object", "properties": {"path": {}, "content": {}}});
    m.check_schema("write_file", &schema).unwrap();
    m.check_schema("read_text_file", &json!({})).unwrap();
    let renamed = json!({"type": "object", "properties": {"file": {}, "content": {}}});
    let refused = m
        .check_schema("write_file", &renamed)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("`write_file`")
            && refused.contains("`path`")
            && refused.contains("content, file"),
        "{refused}"
    );
    let moved = m.tool("move_file").unwrap();
    assert!(moved.card.is_some());
    let no_destination = json!({"properties": {"source": {}}});
    let refused = m
        .check_schema("move_file", &no_destination)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("`destination`") && refused.contains("title"),
        "{refused}"
    );
}

#[test]
fn a_file_diff_shows_the_change_escaped_and_bounded() {
    let diff = file_diff("plan.md", Some("one\ntwo\n"), "one\n2\u{202e}\n");
    assert_eq!(diff[0], "--- plan.md");
    assert_eq!(diff[1], "+++ plan.md");
    assert!(diff.contains(&"-two".to_owned()), "{diff:?}");
    assert!(diff.contains(&"+2\\u{202e}".to_owned()), "{diff:?}");
    assert!(diff.contains(&" one".to_owned()), "{diff:?}");
    let new = file_diff("new.md", None, "a\n");
    assert_eq!(
        new,
        vec!["--- (a new file)", "+++ new.md", "@@ -0,0 +1 @@", "+a"]
    );
    assert_eq!(file_diff("p", Some("same"), "same").len(), 1);
    let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
    let big = file_diff("big.md", None, &long);
    assert_eq!(big.len(), PREVIEW_LINES + 1);
    assert_eq!(big.last().unwrap(), "63 more lines");
}

#[test]
fn an_unreadable_file_is_not_called_new() {
    let lines = unreadable_preview("../secret.txt", "Access denied", "a\nb\n");
    assert_eq!(
        lines,
        [
            "../secret.txt cannot be read now (Access denied); the content as sent:",
            "+a",
            "+b"
        ]
    );
}

#[test]
fn an_edit_diff_applies_exact_edits_or_shows_them_as_sent() {
    let edits = vec![("two".to_owned(), "2".to_owned())];
    let diff = edit_diff("plan.md", Some("one\ntwo\n"), &edits);
    assert!(
        diff.contains(&"-two".to_owned()) && diff.contains(&"+2".to_owned()),
        "{diff:?}"
    );
    assert_eq!(diff[0], "--- plan.md");
    let missing = vec![("three".to_owned(), "3".to_owned())];
    let diff = edit_diff("plan.md", Some("one\ntwo\n"), &missing);
    assert!(
        diff[0].contains("Edit 1's text is not in plan.md"),
        "{diff:?}"
    );
    assert_eq!(&diff[1..], ["@@ edit 1 of 1 @@", "-three", "+3"]);
    let unreadable = edit_diff("gone.md", None, &edits);
    assert!(unreadable[0].contains("cannot be read"), "{unreadable:?}");
}

#[test]
fn placeholders_are_read_strictly() {
    assert_eq!(
        placeholders("Move {source} to {destination}"),
        Some(vec!["source", "destination"])
    );
    assert_eq!(placeholders("no braces"), Some(vec![]));
    assert_eq!(placeholders("{}"), None);
    assert_eq!(placeholders("{open"), None);
    assert_eq!(placeholders("close}"), None);
}
