//! The loader's refusals and the registry's resolution (DESIGN §4).

use super::*;

fn one(tool_yaml: &str) -> Result<Manifest, ManifestError> {
    Manifest::from_yaml(&format!("plugin: t\ntools:\n{tool_yaml}"))
}

const RESTORE: &str = "  - name: restore\n    effect: write\n    confirm: never\n";

#[test]
fn effect_is_required() {
    assert!(matches!(one("  - name: a\n"), Err(ManifestError::Parse(_))));
}

#[test]
fn unknown_effect_is_refused() {
    assert!(matches!(
        one("  - name: a\n    effect: delete\n"),
        Err(ManifestError::Parse(_))
    ));
}

#[test]
fn confirm_on_read_or_destructive_is_refused() {
    for effect in ["read", "destructive"] {
        let err = one(&format!(
            "  - name: a\n    effect: {effect}\n    confirm: never\n"
        ))
        .unwrap_err();
        assert_eq!(
            err,
            ManifestError::ConfirmNotOnWrite {
                tool: "a".into(),
                effect: if effect == "read" {
                    "read"
                } else {
                    "destructive"
                }
            }
        );
    }
    assert!(one("  - name: a\n    effect: write\n    confirm: once\n").is_ok());
}

#[test]
fn answers_directly_on_destructive_is_refused() {
    let err = one("  - name: a\n    effect: destructive\n    answers_directly: true\n");
    assert_eq!(
        err.unwrap_err(),
        ManifestError::AnswersDirectlyOnDestructive { tool: "a".into() }
    );
    assert!(one("  - name: a\n    effect: read\n    answers_directly: true\n").is_ok());
}

#[test]
fn undo_only_on_destructive() {
    let err = one(&format!(
        "  - name: a\n    effect: write\n    undo: restore\n{RESTORE}"
    ));
    assert_eq!(
        err.unwrap_err(),
        ManifestError::UndoNotOnDestructive { tool: "a".into() }
    );
}

#[test]
fn reply_undo_only_on_a_write_without_a_card_of_its_own() {
    let ok = one(&format!(
        "  - name: a\n    effect: write\n    confirm: never\n    reply_undo: restore\n{RESTORE}"
    ))
    .unwrap();
    assert_eq!(ok.tools[0].reply_undo.as_deref(), Some("restore"));
    assert_eq!(ok.tools[0].to_wire().reply_undo.as_deref(), Some("restore"));
    for tool in [
        "  - name: a\n    effect: destructive\n    reply_undo: restore\n",
        "  - name: a\n    effect: read\n    reply_undo: restore\n",
        "  - name: a\n    effect: write\n    approval: pinned\n    reply_undo: restore\n",
    ] {
        assert_eq!(
            one(&format!("{tool}{RESTORE}")).unwrap_err(),
            ManifestError::ReplyUndoNotOnPlainWrite { tool: "a".into() },
            "{tool}"
        );
    }
}

#[test]
fn reply_undo_names_a_plain_write_of_the_same_manifest() {
    assert_eq!(
        one("  - name: a\n    effect: write\n    reply_undo: nowhere\n").unwrap_err(),
        ManifestError::UndoUnknown {
            tool: "a".into(),
            undo: "nowhere".into()
        }
    );
    assert_eq!(
        one("  - name: a\n    effect: write\n    reply_undo: restore\n  - name: restore\n    effect: write\n    confirm: once\n")
            .unwrap_err(),
        ManifestError::UndoNotPlainWrite {
            tool: "a".into(),
            undo: "restore".into()
        }
    );
}

#[test]
fn undo_must_exist_in_same_manifest() {
    let err = one("  - name: a\n    effect: destructive\n    undo: nowhere\n");
    assert_eq!(
        err.unwrap_err(),
        ManifestError::UndoUnknown {
            tool: "a".into(),
            undo: "nowhere".into()
        }
    );
}

#[test]
fn undo_must_be_write_confirm_never() {
    for undo_tool in [
        "  - name: restore\n    effect: write\n    confirm: once\n",
        "  - name: restore\n    effect: write\n",
        "  - name: restore\n    effect: read\n",
        "  - name: restore\n    effect: destructive\n",
    ] {
        let err = one(&format!(
            "  - name: a\n    effect: destructive\n    undo: restore\n{undo_tool}"
        ));
        assert_eq!(
            err.unwrap_err(),
            ManifestError::UndoNotPlainWrite {
                tool: "a".into(),
                undo: "restore".into()
            },
            "{undo_tool}"
        );
    }
}

#[test]
fn pinned_tool_cannot_be_an_undo() {
    let err = one(
        "  - name: a\n    effect: destructive\n    undo: restore\n  - name: restore\n    effect: write\n    approval: pinned\n",
    );
    assert_eq!(
        err.unwrap_err(),
        ManifestError::UndoIsPinned {
            tool: "a".into(),
            undo: "restore".into()
        }
    );
}

#[test]
fn undo_window_needs_undo_and_positive_whole_number() {
    let err = one("  - name: a\n    effect: destructive\n    undo_window_days: 30\n");
    assert_eq!(
        err.unwrap_err(),
        ManifestError::BadUndoWindow { tool: "a".into() }
    );
    for bad in ["0", "-3"] {
        let err = one(&format!(
            "  - name: a\n    effect: destructive\n    undo: restore\n    undo_window_days: {bad}\n{RESTORE}"
        ));
        assert_eq!(
            err.unwrap_err(),
            ManifestError::BadUndoWindow { tool: "a".into() }
        );
    }
    let err = one(&format!(
        "  - name: a\n    effect: destructive\n    undo: restore\n    undo_window_days: 1.5\n{RESTORE}"
    ));
    assert!(matches!(err, Err(ManifestError::Parse(_))));
    let ok = one(&format!(
        "  - name: a\n    effect: destructive\n    undo: restore\n    undo_window_days: 30\n{RESTORE}"
    ))
    .unwrap();
    assert_eq!(ok.tools[0].undo_window_days, Some(30));
}

#[test]
fn pinned_only_on_write_and_not_with_confirm() {
    for effect in ["read", "destructive"] {
        let err = one(&format!(
            "  - name: a\n    effect: {effect}\n    approval: pinned\n"
        ));
        assert_eq!(
            err.unwrap_err(),
            ManifestError::PinnedNotOnWrite { tool: "a".into() }
        );
    }
    let err = one("  - name: a\n    effect: write\n    approval: pinned\n    confirm: never\n");
    assert_eq!(
        err.unwrap_err(),
        ManifestError::PinnedWithConfirm { tool: "a".into() }
    );
}

#[test]
fn gate_and_approved_per_call() {
    let m = one(
        "  - name: r\n    effect: read\n  - name: w\n    effect: write\n  - name: c\n    effect: write\n    confirm: once\n  - name: p\n    effect: write\n    approval: pinned\n  - name: d\n    effect: destructive\n",
    )
    .unwrap();
    let g: Vec<(Gate, bool)> = m
        .tools
        .iter()
        .map(|t| (t.gate(), t.approved_per_call()))
        .collect();
    assert_eq!(
        g,
        vec![
            (Gate::None, false),
            (Gate::None, false),
            (Gate::Confirm, false),
            (Gate::Approval, true),
            (Gate::Approval, true)
        ]
    );
}

#[test]
fn resolve_aliases_and_near_misses_before_checks() {
    let m = one("  - name: trash_email\n    effect: destructive\n    aliases: [delete_email]\n")
        .unwrap();
    let reg = Registry::new([m]).unwrap();
    for spelling in [
        "trash_email",
        "Trash_Email",
        "trash-email",
        "trash_emails",
        "TRASH-EMAILS",
        "delete_email",
        "Delete-Emails",
    ] {
        assert_eq!(
            reg.resolve(spelling).unwrap().name,
            "trash_email",
            "{spelling}"
        );
    }
    assert_eq!(
        reg.resolve("wipe_email").unwrap_err(),
        ResolveError::Unknown("wipe_email".into())
    );
}

#[test]
fn plugin_list_groups_tools_with_their_gates() {
    let a = Manifest::from_yaml(
        "plugin: mail\ntools:\n  - name: look\n    effect: read\n  - name: wipe\n    effect: destructive\n    undo: restore\n    undo_window_days: 7\n    aliases: [erase]\n  - name: restore\n    effect: write\n    confirm: never\n",
    )
    .unwrap();
    let b = Manifest::from_yaml(
        "plugin: post\ntools:\n  - name: send\n    effect: write\n    approval: pinned\n  - name: draft\n    effect: write\n    confirm: once\n",
    )
    .unwrap();
    let list = Registry::new([a, b]).unwrap().plugin_list();
    let names: Vec<(&str, Vec<&str>)> = list
        .plugins
        .iter()
        .map(|p| {
            (
                p.name.as_str(),
                p.tools.iter().map(|t| t.name.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("mail", vec!["look", "wipe", "restore"]),
            ("post", vec!["send", "draft"])
        ]
    );
    let wipe = &list.plugins[0].tools[1];
    assert_eq!(wipe.gate, ToolGate::Approval);
    assert!(wipe.approved_per_call);
    assert_eq!(wipe.undo.as_deref(), Some("restore"));
    assert_eq!(wipe.undo_window_days, Some(7));
    assert_eq!(wipe.aliases, vec!["erase".to_string()]);
    assert_eq!(list.plugins[0].tools[0].gate, ToolGate::None);
    assert!(!list.plugins[0].tools[0].approved_per_call);
    assert_eq!(list.plugins[1].tools[0].gate, ToolGate::Approval);
    assert!(list.plugins[1].tools[0].approved_per_call);
    assert_eq!(list.plugins[1].tools[1].gate, ToolGate::Confirm);
    assert!(!list.plugins[1].tools[1].approved_per_call);
}

#[test]
fn duplicate_names_are_refused() {
    let err =
        one("  - name: a\n    effect: read\n  - name: b\n    effect: read\n    aliases: [A]\n");
    assert!(matches!(err, Err(ManifestError::DuplicateName { .. })));
}

#[test]
fn items_names_a_list_parameter() {
    let tool = |items: &str, ty: &str| {
        one(&format!(
            "  - name: wipe\n    effect: destructive\n    items: {items}\n    parameters:\n      type: object\n      properties:\n        ids: {{type: {ty}}}\n"
        ))
    };
    let ok = tool("ids", "array").unwrap();
    assert_eq!(ok.tools[0].items.as_deref(), Some("ids"));
    let err = tool("ids", "string").unwrap_err();
    assert!(matches!(err, ManifestError::ItemsNotAList { .. }), "{err}");
    assert!(err
        .to_string()
        .contains("`items: ids` must name a parameter of type `array`"));
    assert!(matches!(
        tool("paths", "array").unwrap_err(),
        ManifestError::ItemsNotAList { .. }
    ));
    // A tool without `items` is all or nothing.
    let no_items = one("  - name: wipe\n    effect: destructive\n").unwrap();
    assert_eq!(no_items.tools[0].items, None);
}

#[test]
fn editable_names_parameters_of_a_call_approved_per_call_never_its_items() {
    let params = "    parameters:\n      type: object\n      properties:\n        ids: {type: array}\n        note: {type: string}\n";
    let tool = |head: &str, editable: &str| {
        one(&format!(
            "  - name: wipe\n{head}    items: ids\n    editable: [{editable}]\n{params}"
        ))
    };
    let destructive = "    effect: destructive\n";
    let ok = tool(destructive, "note").unwrap();
    assert_eq!(ok.tools[0].editable, vec!["note"]);
    for (head, editable, rule) in [
        (destructive, "ids", "`items` argument"),
        (destructive, "colour", "not a parameter"),
        (
            "    effect: write\n    confirm: never\n",
            "note",
            "approves per call",
        ),
    ] {
        let err = tool(head, editable).unwrap_err();
        assert!(matches!(err, ManifestError::BadEditable { .. }), "{err}");
        assert!(err.to_string().contains(rule), "{err}");
    }
}
