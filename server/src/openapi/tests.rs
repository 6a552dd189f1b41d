//! The document against the server's own checks: each length pattern accepts exactly the texts
//! the server takes, at and around every bound, and every link names an operation of this
//! document and parameters that operation has.

use std::collections::{BTreeMap, BTreeSet};

use iris_core::approvals::{chat_message, MAX_MESSAGE_CHARS};
use iris_core::ports::SearchText;
use serde_json::Value;

use super::described;

/// The pattern at `pointer` as a Rust regex (the document's are ECMA-262; the classes used here
/// read the same).
fn pattern(doc: &Value, pointer: &str) -> regex::Regex {
    let text = doc
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no pattern at {pointer}"));
    regex::Regex::new(text).unwrap_or_else(|e| panic!("{pointer}: {e}"))
}

/// Texts at and around `max` characters, padded, empty, blank and with odd characters inside.
fn edges(max: usize) -> Vec<String> {
    let mut texts = vec![
        String::new(),
        "   ".into(),
        "\t\n".into(),
        "a".into(),
        " a ".into(),
        "\u{3000}a\u{3000}".into(),
        "a\u{0007}b".into(),
        "a\u{202E}b".into(),
        "a\nb".into(),
        "\u{0007}".into(),
        "a\u{0000}b".into(),
    ];
    for n in [max - 1, max, max + 1] {
        texts.push("é".repeat(n));
        texts.push(format!("  {}  ", "x".repeat(n)));
    }
    texts
}

#[test]
fn each_length_pattern_accepts_exactly_what_the_server_takes() {
    let doc = described();
    let schemas = "/components/schemas";

    let message = pattern(
        &doc,
        &format!("{schemas}/ChatRequest/properties/message/pattern"),
    );
    for text in edges(MAX_MESSAGE_CHARS) {
        assert_eq!(
            message.is_match(&text),
            chat_message(&text).is_ok(),
            "message of {} characters: {:?}",
            text.chars().count(),
            text.chars().take(12).collect::<String>()
        );
    }

    let name = pattern(
        &doc,
        &format!("{schemas}/RegistrationRequest/properties/name/pattern"),
    );
    for text in edges(crate::passkeys::api::MAX_NAME_CHARS) {
        assert_eq!(
            name.is_match(&text),
            crate::passkeys::api::passkey_name(&text).is_ok(),
            "passkey name {text:?}"
        );
    }

    let reason = pattern(
        &doc,
        &format!("{schemas}/ReasonRequest/properties/reason/pattern"),
    );
    let reason_max = iris_core::approvals::reason::MAX_REASON_CHARS;
    for text in edges(reason_max).into_iter().chain([
        "two\nlines".to_string(),
        "a\rb".to_string(),
        " \n ".to_string(),
    ]) {
        assert_eq!(
            reason.is_match(&text),
            iris_core::approvals::reason::reason_text(&text).is_ok(),
            "reason {text:?}"
        );
        // With the answer, blank is no reason (accepted), anything else is held to the same
        // rule (`ApprovalService::respond_with_passkey`).
        let with_answer = pattern(
            &doc,
            &format!("{schemas}/RespondRequest/properties/reason/pattern"),
        );
        assert_eq!(
            with_answer.is_match(&text),
            text.trim().is_empty() || iris_core::approvals::reason::reason_text(&text).is_ok(),
            "reason with the answer {text:?}"
        );
    }

    let list = super::operation("get", "/governance/approvals");
    let parameters = doc
        .pointer(&format!("{list}/parameters"))
        .and_then(Value::as_array)
        .unwrap();
    let q = parameters.iter().position(|p| p["name"] == "q").unwrap();
    let search = pattern(&doc, &format!("{list}/parameters/{q}/schema/pattern"));
    for text in edges(SearchText::MAX_CHARS) {
        assert_eq!(
            search.is_match(&text),
            SearchText::parse(&text).is_ok(),
            "search {text:?}"
        );
    }
}

#[test]
fn every_link_names_an_operation_and_parameters_it_has() {
    let doc = described();
    // operationId → the names of its parameters.
    let mut operations: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let Some(id) = operation["operationId"].as_str() else {
                continue;
            };
            // A parameter's own name, and the names inside a form-encoded object parameter
            // (the audit's `selection` holds `approval_id`, `limit` and `before`).
            let mut names = BTreeSet::new();
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                names.extend(parameter["name"].as_str().map(str::to_string));
                if let Some(inner) = parameter["schema"]["properties"].as_object() {
                    names.extend(inner.keys().cloned());
                }
            }
            operations.insert(id.to_string(), names);
        }
    }
    let mut links = 0;
    for item in doc["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let Some(responses) = operation["responses"].as_object() else {
                continue;
            };
            for response in responses.values() {
                let Some(named) = response["links"].as_object() else {
                    continue;
                };
                for (name, link) in named {
                    links += 1;
                    let target = link["operationId"].as_str().unwrap();
                    let parameters = operations
                        .get(target)
                        .unwrap_or_else(|| panic!("link {name}: no operation `{target}`"));
                    for parameter in link["parameters"].as_object().into_iter().flatten() {
                        let key = parameter.0;
                        let bare = key.split_once('.').map_or(key.as_str(), |(_, n)| n);
                        assert!(
                            parameters.contains(bare),
                            "link {name}: `{target}` has no parameter `{bare}`"
                        );
                    }
                }
            }
        }
    }
    assert!(links >= 20, "only {links} links");
}
