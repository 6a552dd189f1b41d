//! The scripted model: its rules, steps and placeholders.

use super::*;

fn user(s: &str) -> Message {
    Message::User { content: s.into() }
}

#[test]
fn ids_come_from_results_or_the_first_list_of_objects_with_an_id() {
    let args = json!({"ids": "$ids"});
    let cases = [
        (
            json!({"results": [{"id": "m1"}], "events": [{"id": "x"}]}),
            json!(["m1"]),
        ),
        (
            json!({"total": 2, "events": [{"id": "e1"}, {"id": "e2"}]}),
            json!(["e1", "e2"]),
        ),
        (json!({"names": ["a"], "ids": ["i1"]}), json!(["i1"])),
    ];
    for (observation, ids) in cases {
        let (filled, empty) = fill_args(&args, Some(&observation), &[]);
        assert_eq!(filled, json!({"ids": ids}), "{observation}");
        assert!(!empty);
    }
    let (_, empty) = fill_args(&args, Some(&json!({"events": []})), &[]);
    assert!(empty, "an empty list leaves nothing to name");
}

#[test]
fn demo_script_plays_search_then_trash_with_real_ids() {
    let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
    let mut t = vec![user("trash the promo emails from this week")];
    let first = m.next_turn(&t);
    assert_eq!(first.tool_calls[0].name, "search_inbox");
    t.push(Message::Assistant {
        content: None,
        tool_calls: first.tool_calls.clone(),
    });
    t.push(Message::Tool {
        tool_call_id: first.tool_calls[0].id.clone(),
        content: json!({"results": [{"id": "m1"}, {"id": "m2"}], "count": 2}),
    });
    let second = m.next_turn(&t);
    assert_eq!(second.tool_calls[0].name, "trash_email");
    assert_eq!(second.tool_calls[0].arguments, json!({"ids": ["m1", "m2"]}));
    t.push(Message::Assistant {
        content: None,
        tool_calls: second.tool_calls.clone(),
    });
    t.push(Message::Tool {
        tool_call_id: second.tool_calls[0].id.clone(),
        content: json!({"status": "rejected", "message": "the owner rejected this: no"}),
    });
    let third = m.next_turn(&t);
    assert!(third.content.unwrap().contains("Nothing was changed"));
}

/// Two cards waiting in one conversation: the older one answered after the newer request
/// continues its own request (the notice names its call), never the newer request's steps,
/// and never claims work that did not run.
#[test]
fn an_older_card_answered_after_a_newer_request_continues_its_own_request() {
    let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
    let mut t = Vec::new();
    let mut paused = Vec::new();
    for request in [
        "trash the promo emails from this week",
        "trash the promos please",
    ] {
        t.push(user(request));
        for name in ["search_inbox", "trash_email"] {
            let turn = m.next_turn(&t);
            assert_eq!(turn.tool_calls[0].name, name);
            let mut calls = turn.tool_calls.clone();
            calls[0].id = format!("call_{}", t.len());
            t.push(Message::Assistant {
                content: None,
                tool_calls: calls.clone(),
            });
            if name == "search_inbox" {
                t.push(Message::Tool {
                    tool_call_id: calls[0].id.clone(),
                    content: json!({"results": [{"id": "m1"}], "count": 1}),
                });
            } else {
                paused.push((t.len(), calls[0].id.clone()));
            }
        }
    }
    // The first card is rejected: its result goes right after its call, the notice last.
    let (at, id) = paused[0].clone();
    t.insert(
        at,
        Message::Tool {
            tool_call_id: id.clone(),
            content: json!({"status": "rejected", "message": "the owner rejected this: no"}),
        },
    );
    t.push(Message::System {
        content: crate::agent::continue_notice(
            "rejected",
            "Trash 1 email",
            "trash_email",
            &id,
            "trash the promo emails from this week",
        ),
    });
    let reply = m.next_turn(&t).content.unwrap();
    assert_eq!(
        reply,
        "OK, I left them where they are. Nothing was changed, sent or deleted."
    );
    assert_eq!(crate::agent::continued_call_id("no notice here"), None);
}

/// A stale or unknown outcome never gets the success text.
#[test]
fn stale_and_unknown_outcomes_are_not_reported_as_done() {
    let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
    for (status, message, expected) in [
            ("stale", "stale: nothing done", STALE_TEXT),
            (
                "unknown",
                "unknown: it may or may not have run; it will not be run again",
                "I cannot tell whether that happened (unknown: it may or may not have run; it will not be run again). Please check before asking again.",
            ),
        ] {
            let mut t = vec![user("trash the promo emails from this week")];
            for (name, content) in [
                ("search_inbox", json!({"results": [{"id": "m1"}], "count": 1})),
                ("trash_email", json!({"status": status, "message": message})),
            ] {
                let turn = m.next_turn(&t);
                assert_eq!(turn.tool_calls[0].name, name);
                t.push(Message::Assistant {
                    content: None,
                    tool_calls: turn.tool_calls.clone(),
                });
                t.push(Message::Tool {
                    tool_call_id: turn.tool_calls[0].id.clone(),
                    content,
                });
            }
            assert_eq!(m.next_turn(&t).content.as_deref(), Some(expected), "{status}");
        }
}

#[test]
fn arguments_take_the_requests_capture_groups() {
    let m = ScriptedModel::from_yaml(
        r#"
rules:
  - when: "trash promo (\\d+)"
    steps:
      - call: search_inbox
        args: {query: "$1", limit: 1}
"#,
    )
    .unwrap();
    let turn = m.next_turn(&[user("trash promo 17")]);
    assert_eq!(
        turn.tool_calls[0].arguments,
        json!({"query": "17", "limit": 1})
    );
}

#[test]
fn demo_script_does_not_match_lookalike_requests() {
    let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
    for request in [
        "delete the sales report from Priya",
        "don't reply to Anna",
        "reply to Joanna that Friday works",
    ] {
        let turn = m.next_turn(&[user(request)]);
        assert!(
            turn.tool_calls.iter().all(|c| c.name != "trash_category"
                && c.name != "trash_email"
                && c.name != "send_email"),
            "{request}: {turn:?}"
        );
    }
    let turn = m.next_turn(&[user("Delete my promo emails from this week")]);
    assert_eq!(turn.tool_calls[0].name, "trash_category");
}

#[test]
fn demo_script_replies_to_the_newest_match() {
    let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
    let mut t = vec![user("reply to Anna that Thursday works")];
    let first = m.next_turn(&t);
    assert_eq!(first.tool_calls[0].name, "search_inbox");
    t.push(Message::Assistant {
        content: None,
        tool_calls: first.tool_calls.clone(),
    });
    t.push(Message::Tool {
        tool_call_id: first.tool_calls[0].id.clone(),
        content: json!({"results": [{"id": "m9"}, {"id": "m2"}], "count": 2}),
    });
    let second = m.next_turn(&t);
    assert_eq!(second.tool_calls[0].name, "send_email");
    assert_eq!(second.tool_calls[0].arguments["reply_to_id"], "m9");
    assert!(second.tool_calls[0].arguments.get("to").is_none());
    // An empty search never reaches send_email.
    let mut empty = vec![user("reply to Anna that Thursday works")];
    empty.push(Message::Assistant {
        content: None,
        tool_calls: first.tool_calls.clone(),
    });
    empty.push(Message::Tool {
        tool_call_id: first.tool_calls[0].id.clone(),
        content: json!({"results": [], "count": 0}),
    });
    assert!(m.next_turn(&empty).tool_calls.is_empty());
}

/// A card answered after a newer request in the same chat resumes the older run, while the
/// rule follows the newer request: its reply's `{summary}` has nothing to fill, so the owner
/// reads a plain "Done." line, never the braces.
#[test]
fn a_reply_never_shows_an_unfilled_placeholder() {
    let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
    let call = |name: &str, id: &str| Message::Assistant {
        content: None,
        tool_calls: vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({}),
        }],
    };
    let result = |id: &str, content: Value| Message::Tool {
        tool_call_id: id.into(),
        content,
    };
    let t = vec![
        user("trash the promo emails from this week"),
        call("search_inbox", "c1"),
        result("c1", json!({"results": [{"id": "m1"}], "count": 1})),
        call("trash_email", "c2"),
        // The trash card, approved after the next request: its result placed at its call.
        result("c2", json!({"trashed": 1, "restorable": ["m1"]})),
        user("reply to Anna that Thursday works"),
        call("search_inbox", "c3"),
        result("c3", json!({"results": [{"id": "m9"}], "count": 1})),
        call("send_email", "c4"),
        result("c4", json!({"status": "pending"})),
    ];
    let reply = m.next_turn(&t).content.unwrap();
    assert_eq!(reply, DONE_TEXT);
    assert!(!has_placeholder(&reply));
    // A template whose fields are there is filled as written.
    assert_eq!(
        fill_text(
            "Moved {trashed} of {count}.",
            Some(&json!({"trashed": 2, "count": 3}))
        ),
        "Moved 2 of 3."
    );
    assert!(has_placeholder("Done: {trashed} emails"));
    assert!(!has_placeholder("a {} set, {1} or { spaced }"));
}

#[test]
fn empty_search_replies_instead_of_calling() {
    let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
    let mut t = vec![user("trash the promo emails from this week")];
    let first = m.next_turn(&t);
    t.push(Message::Assistant {
        content: None,
        tool_calls: first.tool_calls.clone(),
    });
    t.push(Message::Tool {
        tool_call_id: first.tool_calls[0].id.clone(),
        content: json!({"results": [], "count": 0}),
    });
    let second = m.next_turn(&t);
    assert!(second.tool_calls.is_empty());
    assert!(second.content.unwrap().contains("nothing"));
}

#[test]
fn a_reply_fills_a_field_one_level_down_and_never_shows_braces() {
    let observation =
        json!({"trashed": 2, "left_out": {"count": 1, "message": "One was left out."}});
    assert_eq!(
        fill_text("Moved {trashed}. {left_out.message}", Some(&observation)),
        "Moved 2. One was left out."
    );
    // Without that field the template is not the one for this observation.
    assert_eq!(
        fill_text(
            "Moved {trashed}. {left_out.message}",
            Some(&json!({"trashed": 2}))
        ),
        DONE_TEXT
    );
}

#[test]
fn demo_script_acknowledges_a_rejections_reason_whatever_words_it_holds() {
    let m = ScriptedModel::from_yaml(DEMO_SCRIPT).unwrap();
    // The card's title and the reason both hold words other rules answer (trash, promo, undo).
    let t = vec![user(
        "I rejected “Trash 3 emails” because: undo nothing, I still read those promo emails",
    )];
    let turn = m.next_turn(&t);
    assert!(turn.tool_calls.is_empty(), "{:?}", turn.tool_calls);
    assert!(turn.content.unwrap().starts_with("Understood"));
}
