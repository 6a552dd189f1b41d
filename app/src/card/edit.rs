//! Editing a call before approving it (docs/adr/0122-shaping-a-call.md): once the page is live,
//! a card whose call has fields the owner may edit (`card.editable`: a reply's To, Subject and
//! Body) gets "Edit". The fields open in a form, prefilled with the pinned call; "Review" asks
//! the server to check the edit as the approval will (a refusal shows on the card, which keeps
//! waiting) and to remake the call's preview for it (a file write: the change against the file
//! now), then opens the usual confirm dialog, which shows each changed field against the
//! model's version (a text of several lines as a line diff) and that preview; its confirm
//! approves the edited call, checked again.

use std::collections::BTreeMap;

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

/// The fields the owner changed, as the API takes them (a list field split at commas), or
/// `None` when nothing is being edited or nothing changed.
pub(super) fn edits_to_send(
    args: &Value,
    state: CardState,
) -> Option<serde_json::Map<String, Value>> {
    let open = state.edits.get_untracked()?;
    let mut edits = serde_json::Map::new();
    for (field, typed) in open {
        let pinned = args.get(&field);
        if shown(pinned) == typed {
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
            Value::String(typed)
        };
        edits.insert(field, value);
    }
    (!edits.is_empty()).then_some(edits)
}

/// What the confirm dialog repeats for an edited call: the action words and, per changed field,
/// "Field: was … → now …" (a long text whole, as it will go out). `None` when nothing changed.
pub(super) fn dialog_terms(
    action: &str,
    args: &Value,
    state: CardState,
) -> Option<(String, Vec<String>)> {
    let edits = edits_to_send(args, state)?;
    let mut lines = Vec::new();
    for (field, value) in &edits {
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
    // The preview the server remade for the edited call (a file write: the change against the
    // file as it is now), as the card shows the pinned call's.
    if let Some(review) = state.review.get_untracked() {
        if !review.preview.is_empty() {
            lines.push("What it will change:".to_owned());
            lines.extend(review.preview);
        }
    }
    Some((format!("{action} as edited"), lines))
}

/// The most lines a text may have on either side for [`line_diff`] (its table is one cell per
/// pair of lines).
const DIFF_LINES: usize = 400;

/// A text of several lines against its edited version, line by line as a diff reads ("  kept",
/// "- removed", "+ added", in order; a longest common run of lines kept); `None` for one-line
/// texts (said as was/now) or longer than [`DIFF_LINES`].
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

#[cfg(test)]
mod tests {
    use super::line_diff;

    use super::DIFF_LINES;

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
    let args = approval.args.clone();
    let open = {
        let (fields, args) = (fields.clone(), args.clone());
        move |_| {
            let start: BTreeMap<String, String> = fields
                .iter()
                .map(|f| (f.clone(), shown(args.get(f))))
                .collect();
            state.edits.set(Some(start));
        }
    };
    // "Review" asks the server first: the edit is checked as the approval will check it (a
    // refusal shows on the card, which keeps waiting), and its preview is remade for the edited
    // call; then the usual confirm dialog opens.
    let review = {
        let (id, args) = (approval.id.clone(), args.clone());
        move |_| {
            if state.busy.get_untracked() {
                return;
            }
            let Some(edits) = edits_to_send(&args, state) else {
                state.review.set(None);
                state.dialog_open.set(true);
                return;
            };
            state.busy.set(true);
            state.error.set(None);
            let id = id.clone();
            leptos::task::spawn_local(async move {
                let answer = crate::api::review_edit(id, edits).await;
                state.busy.try_set(false);
                match answer {
                    Ok(review) => {
                        state.review.try_set(Some(review));
                        state.dialog_open.try_set(true);
                    }
                    Err(error) => {
                        state.error.try_set(Some(error.to_string()));
                    }
                }
            });
        }
    };
    let form = part(move || {
        let editing = state.edits.get()?;
        Some(any(view! {
            <div class="card-edit" data-testid="card-edit">
                <p class="edit-note">"Change what will be sent, then review it. IRIS checks your version as it checks the assistant's."</p>
                {fields.iter().map(|field| {
                    let field = field.clone();
                    let id = format!("edit-{}-{field}", approval.id);
                    let value = editing.get(&field).cloned().unwrap_or_default();
                    let long = field == "body" || field == "content" || value.contains('\n');
                    let on_input = {
                        let field = field.clone();
                        move |ev| {
                            let typed = event_target_value(&ev);
                            state.edits.update(|e| {
                                if let Some(e) = e {
                                    e.insert(field.clone(), typed);
                                }
                            });
                        }
                    };
                    any(view! {
                        <label class="edit-field" for=id.clone()>{label(&field)}</label>
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
                        on:click=move |_| state.edits.set(None)>
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
            hidden=flag(move || !live.get() || state.edits.with(Option::is_some))
            disabled=flag(move || state.busy.get())
            on:click=open>
            {text(|| "Edit".to_owned())}
        </button>
        {form}
    })
}
