//! Editing a call before approving it (docs/adr/0122-shaping-a-call.md): once the page is live,
//! a card whose call has fields the owner may edit (`card.editable`: a reply's To, Subject and
//! Body) gets "Edit". The fields open in a form, prefilled with the pinned call; "Review" sends
//! what is typed to the server ([`crate::api::review_edit`]), which finds the changed fields,
//! checks the edit as the approval will (a refusal shows on the card, which keeps waiting),
//! remakes the call's preview for it (a file write: the change against the file now) and words
//! the confirm dialog's lines ([`review_lines`]: each changed field against the model's
//! version, a text of several lines as a line diff); the dialog then opens, and its confirm
//! approves the reviewed edit, checked again.
//!
//! What is typed becomes a call on the server only ([`edits_from_form`]): the browser holds
//! texts, never the call's JSON (each value type the browser reads or writes costs the phone's
//! wasm its own code, BENCHMARKS.md "Wasm size").

use iris_core::wire::Approval;
use leptos::prelude::*;
use serde_json::Value;

use super::CardState;
use crate::shape::{any, flag, part, text};

/// A pinned value as the form shows it: text as it is, a list as "a, b".
fn shown(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(", "),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The field's label ("Subject" for `subject`).
pub(super) fn label(field: &str) -> String {
    let mut chars = field.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().collect::<String>() + &chars.as_str().replace('_', " "),
        None => String::new(),
    }
}

/// The edit a form's texts make of the pinned `args`: the fields of `fields` (a card's
/// `editable`, in its order; `typed` holds one text per field, as the form sends them) whose
/// text differs from the pinned value as the form shows it, a list field split at commas.
/// Empty when nothing changed. Server only: the browser sends texts.
#[cfg(feature = "ssr")]
pub fn edits_from_form(
    args: &Value,
    fields: &[String],
    typed: &[String],
) -> serde_json::Map<String, Value> {
    let mut edits = serde_json::Map::new();
    for (field, typed) in fields.iter().zip(typed) {
        let pinned = args.get(field);
        if shown(pinned) == *typed {
            continue;
        }
        let value = if pinned.is_some_and(Value::is_array) {
            Value::Array(
                typed
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| Value::String(s.to_owned()))
                    .collect(),
            )
        } else {
            Value::String(typed.clone())
        };
        edits.insert(field.clone(), value);
    }
    edits
}

/// The confirm dialog's lines for `edits` of the pinned `args`: per changed field, in the
/// form's order (`fields`, the card's `editable`), "Field (edited by you):" then the change (a
/// text of several lines as a line diff, else "was: …" and "now: …"), then the preview the
/// server remade for the edited call (a file write: the change against the file as it is
/// now), as the card shows the pinned call's.
#[cfg(feature = "ssr")]
pub fn review_lines(
    args: &Value,
    fields: &[String],
    edits: &serde_json::Map<String, Value>,
    preview: &[String],
) -> Vec<String> {
    let mut lines = Vec::new();
    let changed = fields
        .iter()
        .filter_map(|field| edits.get(field).map(|value| (field, value)));
    for (field, value) in changed {
        lines.push(format!("{} (edited by you):", label(field)));
        let (was, now) = (shown(args.get(field)), shown(Some(value)));
        match line_diff(&was, &now) {
            Some(diff) => lines.extend(diff),
            None => {
                lines.push(format!("was: {was}"));
                lines.push(format!("now: {now}"));
            }
        }
    }
    if !preview.is_empty() {
        lines.push("What it will change:".to_owned());
        lines.extend(preview.iter().cloned());
    }
    lines
}

/// What the confirm dialog repeats for a reviewed edit: the action words "as edited" and the
/// server's lines ([`review_lines`]). `None` when nothing is edited.
pub(super) fn dialog_terms(action: &str, state: CardState) -> Option<(String, Vec<String>)> {
    state
        .edited
        .with_untracked(Option::is_some)
        .then(|| (format!("{action} as edited"), state.review.get_untracked()))
}

/// The most lines a text may have on either side for [`line_diff`] (its table is one cell per
/// pair of lines).
#[cfg(feature = "ssr")]
const DIFF_LINES: usize = 400;

/// A text of several lines against its edited version, line by line as a diff reads ("  kept",
/// "- removed", "+ added", in order; a longest common run of lines kept); `None` for one-line
/// texts (said as was/now) or longer than [`DIFF_LINES`].
#[cfg(feature = "ssr")]
fn line_diff(was: &str, now: &str) -> Option<Vec<String>> {
    let (a, b): (Vec<&str>, Vec<&str>) = (was.lines().collect(), now.lines().collect());
    if (a.len() < 2 && b.len() < 2) || a.len() > DIFF_LINES || b.len() > DIFF_LINES {
        return None;
    }
    // kept[i][j]: the longest run of lines kept in a[i..] and b[j..].
    let mut kept = vec![vec![0u16; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            kept[i][j] = if a[i] == b[j] {
                kept[i + 1][j + 1] + 1
            } else {
                kept[i + 1][j].max(kept[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut diff) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            diff.push(format!("  {}", a[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || kept[i + 1][j] >= kept[i][j + 1]) {
            // Removed lines before the added ones that replace them, as a diff reads.
            diff.push(format!("- {}", a[i]));
            i += 1;
        } else {
            diff.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    Some(diff)
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use serde_json::json;

    use super::{edits_from_form, line_diff, review_lines, DIFF_LINES};

    /// The form's texts become the edit on the server: a text as the form showed it is no
    /// change, a list is split at commas (blanks dropped), and only changed fields are in it.
    #[test]
    fn the_forms_texts_become_an_edit_of_the_changed_fields_only() {
        let args = json!({"to": ["anna@example.org"], "subject": "Re: Lunch", "body": "Hi"});
        let fields = ["to", "subject", "body"].map(String::from);
        let same = ["anna@example.org", "Re: Lunch", "Hi"].map(String::from);
        assert!(edits_from_form(&args, &fields, &same).is_empty());
        let typed = [
            " anna@example.org , ,bo@example.org",
            "Re: Lunch",
            "Hi\nThursday",
        ]
        .map(String::from);
        let edits = edits_from_form(&args, &fields, &typed);
        assert_eq!(
            serde_json::Value::Object(edits.clone()),
            json!({"to": ["anna@example.org", "bo@example.org"], "body": "Hi\nThursday"})
        );
        let lines = review_lines(&args, &fields, &edits, &["+ a line".to_owned()]);
        assert_eq!(
            lines,
            vec![
                "To (edited by you):",
                "was: anna@example.org",
                "now: anna@example.org, bo@example.org",
                "Body (edited by you):",
                "  Hi",
                "+ Thursday",
                "What it will change:",
                "+ a line",
            ]
        );
    }

    #[test]
    fn a_body_is_told_line_by_line_and_a_line_as_was_and_now() {
        let was = "Hi Anna,\n\nThursday works for me.\n\nRobin";
        let now = "Hi Anna,\n\nThursday works, and I will bring the salad.\n\nRobin";
        assert_eq!(
            line_diff(was, now).unwrap(),
            vec![
                "  Hi Anna,",
                "  ",
                "- Thursday works for me.",
                "+ Thursday works, and I will bring the salad.",
                "  ",
                "  Robin",
            ]
        );
        assert_eq!(line_diff("Re: Lunch", "Re: Dinner"), None);
        assert_eq!(
            line_diff("a\nb", "a\nb\nc").unwrap(),
            vec!["  a", "  b", "+ c"]
        );
        assert_eq!(
            line_diff("a\nb\nc", "c").unwrap(),
            vec!["- a", "- b", "  c"]
        );
        let long = "x\n".repeat(DIFF_LINES + 1);
        assert_eq!(line_diff(&long, "y\nz"), None);
    }
}

/// "Edit" on a live card that may be edited, and the form it opens.
#[component]
pub(super) fn CardEdit(
    /// The row (its pinned arguments and `card.editable`).
    approval: Approval,
    /// The card's interaction state (`edits`, busy, dialog).
    state: CardState,
    /// Whether the page is live.
    live: RwSignal<bool>,
) -> impl IntoView {
    let fields = approval.card.editable.clone();
    let pinned: Vec<String> = fields.iter().map(|f| shown(approval.args.get(f))).collect();
    let open = move |_| {
        state.edited.set(None);
        state.edits.set(pinned.clone());
    };
    // "Review" asks the server first: it finds what changed, checks the edit as the approval
    // will (a refusal shows on the card, which keeps waiting) and words the dialog's lines;
    // then the usual confirm dialog opens (as the pinned call's when nothing changed).
    let review = {
        let id = approval.id.clone();
        move |_| {
            if state.busy.get_untracked() {
                return;
            }
            state.busy.set(true);
            state.error.set(None);
            let (id, typed) = (id.clone(), state.edits.get_untracked());
            leptos::task::spawn_local(async move {
                let answer = crate::api::review_edit(id, typed).await;
                state.busy.try_set(false);
                match answer {
                    Ok(reviewed) => {
                        state.review.try_set(reviewed.lines);
                        state.edited.try_set(reviewed.edits);
                        state.dialog_open.try_set(true);
                    }
                    Err(error) => {
                        state.error.try_set(Some(error.to_string()));
                    }
                }
            });
        }
    };
    // Drawn when the form opens or shuts, not on every key: the controls keep the caret.
    let editing = Memo::new(move |_| state.edits.with(|typed| !typed.is_empty()));
    let form = part(move || {
        editing.get().then(|| any(view! {
            <div class="card-edit" data-testid="card-edit">
                <p class="edit-note">"Change what will be sent, then review it. IRIS checks your version as it checks the assistant's."</p>
                {fields.iter().zip(state.edits.get_untracked()).enumerate().map(|(i, (field, value))| {
                    let id = format!("edit-{}-{field}", approval.id);
                    let long = field == "body" || field == "content" || value.contains('\n');
                    let on_input = move |ev| {
                        let now = event_target_value(&ev);
                        state.edits.update(|typed| {
                            if let Some(slot) = typed.get_mut(i) {
                                *slot = now;
                            }
                        });
                    };
                    any(view! {
                        <label class="edit-field" for=id.clone()>{label(field)}</label>
                        {if long {
                            any(view! {
                                <textarea id=id data-testid=format!("edit-{field}") rows="8"
                                    prop:value=value on:input=on_input></textarea>
                            })
                        } else {
                            any(view! {
                                <input id=id type="text" data-testid=format!("edit-{field}")
                                    prop:value=value on:input=on_input/>
                            })
                        }}
                    })
                }).collect_view()}
                <div class="edit-actions">
                    <button type="button" class="btn btn-quiet" data-testid="edit-cancel"
                        disabled=flag(move || state.busy.get())
                        on:click=move |_| {
                            state.edits.set(Vec::new());
                            state.edited.set(None);
                        }>
                        "Cancel edit"
                    </button>
                    <button type="button" class="btn btn-primary" data-testid="edit-review"
                        disabled=flag(move || state.busy.get())
                        on:click=review.clone()>
                        "Review"
                    </button>
                </div>
            </div>
        }))
    });
    any(view! {
        <button type="button" class="btn btn-quiet card-edit-open" data-testid="edit-button"
            hidden=flag(move || !live.get() || editing.get())
            disabled=flag(move || state.busy.get())
            on:click=open>
            {text(|| "Edit".to_owned())}
        </button>
        {form}
    })
}
