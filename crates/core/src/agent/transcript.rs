//! Transcript rules of the loop (DESIGN §3 step 4): every tool call id gets exactly one result,
//! and a resumed call's result goes right after the results of its step.

use serde_json::{json, Value};

use crate::model::{Message, ToolCall};

/// Whether `call_id` already has a result in `transcript`.
pub fn has_result(transcript: &[Message], call_id: &str) -> bool {
    transcript
        .iter()
        .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == call_id))
}

/// The observation message for call `id`.
pub fn tool_result(id: &str, content: Value) -> Message {
    Message::Tool {
        tool_call_id: id.to_string(),
        content,
    }
}

/// A tool result is always a JSON object (DESIGN §7): anything else is wrapped as `{"result": v}`.
pub fn as_object(v: Value) -> Value {
    if v.is_object() {
        v
    } else {
        json!({ "result": v })
    }
}

/// A paused call's observation, to be placed right after the step that asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacedResult {
    /// The paused call's id (unique in its conversation: ids are minted where the model gave
    /// none or repeated one).
    pub call_id: String,
    /// The observation (a JSON object).
    pub observation: Value,
    /// What the model is told at the end of the transcript when other messages came after the
    /// paused step: which card, which decision, which call, so it continues that request.
    pub notice: String,
}

/// What the model is told at the end of the transcript when other messages came between its
/// paused call and the answer (DESIGN §3 step 8): the card, the decision (`decision` in words:
/// "approved", "rejected", …), the call and its request, so it continues that request. The one
/// spelling of the notice; [`continued_call_id`] reads the call id back.
pub fn continue_notice(
    decision: &str,
    title: &str,
    tool: &str,
    call_id: &str,
    request: &str,
) -> String {
    format!(
        "The owner {decision} the card \"{title}\": your call `{tool}` (id {call_id}), made for the request \"{request}\". Its result is above, right after that call. Continue that request from its result."
    )
}

/// The id of the call a [`continue_notice`] names; `None` for any other text.
pub fn continued_call_id(notice: &str) -> Option<&str> {
    let (_, rest) = notice.split_once("` (id ")?;
    let (id, _) = rest.split_once("), made for the request ")?;
    (!id.is_empty()).then_some(id)
}

/// Places the paused call's observation right after the results of its step (replacing a
/// placeholder if one is there), so the transcript never has a call without a result. When
/// other messages came after that step, [`PlacedResult::notice`] is appended so the model
/// knows where the answer is and which request it belongs to.
pub fn place_result(transcript: &mut Vec<Message>, placed: &PlacedResult) {
    let call_id = placed.call_id.as_str();
    if let Some(existing) = transcript.iter_mut().find_map(|m| match m {
        Message::Tool {
            tool_call_id,
            content,
        } if tool_call_id == call_id => Some(content),
        _ => None,
    }) {
        *existing = placed.observation.clone();
        return;
    }
    let asked = transcript.iter().position(|m| {
        matches!(m, Message::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| c.id == call_id))
    });
    let at = match asked {
        Some(i) => {
            let mut j = i + 1;
            while j < transcript.len() && matches!(transcript[j], Message::Tool { .. }) {
                j += 1;
            }
            j
        }
        None => transcript.len(),
    };
    transcript.insert(at, tool_result(call_id, placed.observation.clone()));
    if at + 1 < transcript.len() {
        transcript.push(Message::System {
            content: placed.notice.clone(),
        });
    }
}

/// What one run adds to a conversation's transcript (DESIGN §8 "nothing is lost"): the paused
/// call's result it placed (a resume), then the messages it appended. Applied to whatever the
/// transcript is when the run's commit lands, so a turn and a resume (or two resumes) that ran
/// side by side both keep every message: the transcript is only ever appended to, never
/// overwritten.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TranscriptChange {
    /// The instructions a new conversation opens with (written only if the conversation is
    /// still empty when the change lands).
    pub opening: Option<Message>,
    /// The resumed call's result, placed after its step.
    pub placed: Option<PlacedResult>,
    /// Messages appended after the transcript the run read, in order.
    pub appended: Vec<Message>,
}

impl TranscriptChange {
    /// The change from `read` (the transcript the run started from, after placing
    /// `placed`) to `after` (the run's transcript at its end, which extends `read`).
    pub fn between(read: &[Message], after: &[Message], placed: Option<PlacedResult>) -> Self {
        let mut appended = after.get(read.len()..).unwrap_or_default().to_vec();
        let opening = match appended.first() {
            Some(Message::System { .. }) if read.is_empty() => Some(appended.remove(0)),
            _ => None,
        };
        TranscriptChange {
            opening,
            placed,
            appended,
        }
    }

    /// `stored` (the transcript as it is now) with this change applied: the opening (only into
    /// an empty conversation: not repeated when another turn created it meanwhile), the result
    /// placed (unless the call already has one), then the appended messages.
    pub fn apply(&self, mut stored: Vec<Message>) -> Vec<Message> {
        if stored.is_empty() {
            stored.extend(self.opening.clone());
        }
        if let Some(placed) = &self.placed {
            if !has_result(&stored, &placed.call_id) {
                place_result(&mut stored, placed);
            }
        }
        stored.extend_from_slice(&self.appended);
        stored
    }
}

/// The transcript as sent to the model: every call id has exactly one result. A call paused on
/// an approval that is still open gets a "waiting" result in the copy sent (never stored).
pub fn with_all_results(transcript: &[Message]) -> Vec<Message> {
    let answered: std::collections::BTreeSet<&str> = transcript
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(transcript.len());
    let mut i = 0;
    while i < transcript.len() {
        out.push(transcript[i].clone());
        if let Message::Assistant { tool_calls, .. } = &transcript[i] {
            let mut j = i + 1;
            while j < transcript.len() && matches!(transcript[j], Message::Tool { .. }) {
                out.push(transcript[j].clone());
                j += 1;
            }
            for c in tool_calls
                .iter()
                .filter(|c| !answered.contains(c.id.as_str()))
            {
                out.push(tool_result(
                    &c.id,
                    json!({"status": "waiting", "message": "not run yet: waiting for the owner's answer on this call"}),
                ));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// Gives every call of a new model step an id unique in its conversation: a call the model
/// server sent without an id, or with one already used in `transcript` or earlier in the same
/// step, gets an id minted by IRIS (`call_iris_` and 32 hex digits). Unique ids are what place
/// each result after its own call (a server that names every step's first call `call_0` would
/// otherwise have a resume overwrite an earlier result).
pub fn mint_call_ids(calls: &mut [ToolCall], transcript: &[Message]) {
    let mut used: std::collections::BTreeSet<String> = transcript
        .iter()
        .flat_map(|m| match m {
            Message::Assistant { tool_calls, .. } => {
                tool_calls.iter().map(|c| c.id.clone()).collect::<Vec<_>>()
            }
            Message::Tool { tool_call_id, .. } => vec![tool_call_id.clone()],
            _ => Vec::new(),
        })
        .collect();
    for call in calls {
        if call.id.trim().is_empty() || used.contains(&call.id) {
            call.id = format!("call_iris_{}", uuid::Uuid::new_v4().simple());
        }
        used.insert(call.id.clone());
    }
}

/// The OpenAI protocol's rule for a transcript: every assistant tool call is followed, before
/// the next non-tool message, by exactly one tool message with its id, in the calls' order;
/// no tool message answers a call that was not asked just before it. One sentence per break
/// (empty when the transcript is valid): what the tests of every interleaving of turns and
/// resumes check.
pub fn protocol_errors(messages: &[Message]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match &messages[i] {
            Message::Assistant { tool_calls, .. } => {
                let mut j = i + 1;
                let mut answered = Vec::new();
                while let Some(Message::Tool { tool_call_id, .. }) = messages.get(j) {
                    answered.push(tool_call_id.clone());
                    j += 1;
                }
                let asked: Vec<String> = tool_calls.iter().map(|c| c.id.clone()).collect();
                if asked != answered {
                    errors.push(format!("at {i}: asked {asked:?}, answered {answered:?}"));
                }
                i = j;
            }
            Message::Tool { tool_call_id, .. } => {
                errors.push(format!(
                    "at {i}: a result for {tool_call_id} follows no call"
                ));
                i += 1;
            }
            _ => i += 1,
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> Message {
        Message::User {
            content: text.into(),
        }
    }

    fn asks(id: &str) -> Message {
        Message::Assistant {
            content: None,
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: "trash_email".into(),
                arguments: json!({"ids": ["m1"]}),
            }],
        }
    }

    fn says(text: &str) -> Message {
        Message::Assistant {
            content: Some(text.into()),
            tool_calls: Vec::new(),
        }
    }

    fn placed(id: &str) -> PlacedResult {
        PlacedResult {
            call_id: id.into(),
            observation: json!({"status": "executed"}),
            notice: format!("The owner approved the card \"Trash 1 email\": your call {id}."),
        }
    }

    /// A turn that landed while a card's resume was running keeps its messages: the resume's
    /// change lands after it, the result right after its call, the notice and the reply last.
    #[test]
    fn a_resume_that_lands_after_a_turn_keeps_the_turn() {
        let at_pause = vec![user("trash it"), asks("c1")];
        // The resume read the transcript at the pause, placed its result and continued.
        let mut read = at_pause.clone();
        place_result(&mut read, &placed("c1"));
        let mut after = read.clone();
        after.push(says("Finished."));
        let change = TranscriptChange::between(&read, &after, Some(placed("c1")));
        // Meanwhile a turn landed: the owner said more and got an answer.
        let mut stored = at_pause.clone();
        stored.extend([user("hello"), says("hi")]);

        let merged = change.apply(stored);
        assert_eq!(
            protocol_errors(&merged),
            Vec::<String>::new(),
            "{merged:#?}"
        );
        assert_eq!(merged.len(), 7, "{merged:#?}");
        assert_eq!(merged[2], tool_result("c1", json!({"status": "executed"})));
        assert_eq!(merged[3], user("hello"));
        assert_eq!(merged[4], says("hi"));
        assert!(
            matches!(&merged[5], Message::System { content } if content.contains("Trash 1 email")),
            "{merged:#?}"
        );
        assert_eq!(merged[6], says("Finished."));
    }

    /// Two resumes of one conversation, each from its own card, in either order: both results
    /// are placed, each after its own call, and both replies are kept.
    #[test]
    fn two_resumes_of_one_conversation_both_land_in_either_order() {
        let mut stored = vec![user("trash a"), asks("c1"), says("waiting")];
        stored.extend([user("trash b"), asks("c2"), says("waiting")]);
        let change = |id: &str, reply: &str| {
            let mut read = stored.clone();
            place_result(&mut read, &placed(id));
            let mut after = read.clone();
            after.push(says(reply));
            TranscriptChange::between(&read, &after, Some(placed(id)))
        };
        let (first, second) = (change("c1", "done a"), change("c2", "done b"));
        for merged in [
            second.apply(first.apply(stored.clone())),
            first.apply(second.apply(stored.clone())),
        ] {
            assert_eq!(
                protocol_errors(&merged),
                Vec::<String>::new(),
                "{merged:#?}"
            );
            for kept in [says("done a"), says("done b"), user("trash b")] {
                assert!(merged.contains(&kept), "{kept:?} lost: {merged:#?}");
            }
            assert_eq!(
                merged
                    .iter()
                    .filter(|m| matches!(m, Message::Tool { .. }))
                    .count(),
                2
            );
        }
    }

    /// Applying a change whose result is already placed (a retry after a commit that did land)
    /// places nothing twice, and a new conversation's opening is written once.
    #[test]
    fn a_change_places_its_result_once_and_opens_a_conversation_once() {
        let opening = Message::System {
            content: "You are IRIS.".into(),
        };
        let first = TranscriptChange::between(&[], &[opening.clone(), user("a"), says("A")], None);
        let second = TranscriptChange::between(&[], &[opening.clone(), user("b"), says("B")], None);
        let merged = second.apply(first.apply(Vec::new()));
        assert_eq!(
            merged,
            vec![opening, user("a"), says("A"), user("b"), says("B")]
        );

        let stored = vec![user("x"), asks("c1")];
        let mut read = stored.clone();
        place_result(&mut read, &placed("c1"));
        let change = TranscriptChange::between(&read, &read, Some(placed("c1")));
        let once = change.apply(stored);
        assert_eq!(change.apply(once.clone()), once);
        assert_eq!(
            protocol_errors(&with_all_results(&once)),
            Vec::<String>::new()
        );
    }

    /// A model server that names every step's first call `call_0` (or sends no id) gets ids
    /// minted, so a paused call's result can never land on an earlier call's.
    #[test]
    fn repeated_and_missing_call_ids_are_minted_unique() {
        let transcript = vec![user("x"), asks("call_0"), tool_result("call_0", json!({}))];
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "search_inbox".into(),
            arguments: json!({}),
        };
        let mut calls = vec![call("call_0"), call(""), call("call_7"), call("call_7")];
        mint_call_ids(&mut calls, &transcript);
        let ids: Vec<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert!(ids[0].starts_with("call_iris_"), "{ids:?}");
        assert!(ids[1].starts_with("call_iris_"), "{ids:?}");
        assert_eq!(ids[2], "call_7");
        assert!(ids[3].starts_with("call_iris_"), "{ids:?}");
        let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), 4);
    }
}
