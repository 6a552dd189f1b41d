//! An answered card's outcome: who answered, via which surface and when, what ran (and which
//! server runs it now), and a failed resume if any.

use iris_core::wire::{Approval, ApprovalStatus, Execution};
use leptos::prelude::*;

use crate::format::{
    approved_problem, execution_sentence, format_time, lapse_notice, located_items,
    outcome_problem, outcome_tone, pretty_json, result_summary, running_sentence, status_label,
    who_and_where,
};
use crate::shape::{any, text};

/// The most located items listed open on a card; more fold into a "Where each of the N items
/// is" disclosure.
const LOCATED_SHOWN: usize = 10;

/// What happened to an answered card: status, who answered via which surface and when, what
/// ran, and a failed resume if any.
pub(super) fn outcome_view(approval: &Approval, offset: RwSignal<Option<i32>>) -> impl IntoView {
    let status = approval.status;
    let who = who_and_where(approval);
    let answered_at = approval.responded_at.unwrap_or(approval.expires_at);
    let when = text(move || format_time(answered_at, offset.get()));
    // A lapse is dated by the row's own expiry, not by when the sweep noticed it.
    let expires_at = approval.expires_at;

    let tone = outcome_tone(approval);
    let headline = status_label(status);
    // "Approved by … at …, but nothing was done.": who and when belong to the approval, the
    // problem to the call.
    let problem = match status {
        ApprovalStatus::Approved => approved_problem(approval),
        _ => None,
    };
    let head = match status {
        ApprovalStatus::Expired => any(view! {
            <p class="outcome-head"><strong>"Expired"</strong></p>
        }),
        _ => any(view! {
            <p class="outcome-head">
                <strong>{headline}</strong>
                {who}
                " at "
                <time datetime=answered_at.to_rfc3339()>{when}</time>
                {problem.map(|p| any(view! { ", "<strong>{p}</strong> }))}
                "."
            </p>
        }),
    };

    let detail = match status {
        ApprovalStatus::Approved => {
            let sentence = execution_sentence(approval);
            let result = approval.result.clone();
            let summarised = result.as_ref().and_then(result_summary).is_some();
            let raw = result.map(|r| pretty_json(&r));
            let execution = approval.execution.as_str();
            let show_raw_inline = approval.execution == Execution::Executed && !summarised;
            // Which server runs the job now, and since when (docs/liveness.md "who holds a
            // running job").
            let running = approval.running.clone().map(|job| {
                let since = job.since;
                any(view! {
                    <p class="outcome-running" data-testid="outcome-running">
                        {text(move || running_sentence(&job, since.map(|at| format_time(at, offset.get())).as_deref()))}
                    </p>
                })
            });
            // Where each item of an unknown call is now, as its plugin found them; a long list
            // folds away (the sentence above counts them).
            let located = located_items(approval);
            let count = located.len();
            let located = (!located.is_empty()).then(|| {
                let list = view! {
                    <ul class="outcome-located" data-testid="outcome-located">
                        {located
                            .into_iter()
                            .map(|(item, status, sentence)| view! {
                                <li data-status=status>
                                    <span class="located-item">{item}</span>
                                    " — "
                                    {sentence}
                                </li>
                            })
                            .collect_view()}
                    </ul>
                };
                if count > LOCATED_SHOWN {
                    any(view! {
                        <details class="outcome-details">
                            <summary>{format!("Where each of the {count} items is")}</summary>
                            {list}
                        </details>
                    })
                } else {
                    any(list)
                }
            });
            any(view! {
                <p class="outcome-exec" data-testid="outcome-execution" data-execution=execution>{sentence}</p>
                {located}
                {running}
                {raw.map(|raw| {
                    if show_raw_inline {
                        any(view! { <pre class="outcome-result">{raw}</pre> })
                    } else {
                        any(view! {
                            <details class="outcome-details">
                                <summary>"Result"</summary>
                                <pre class="outcome-result">{raw}</pre>
                            </details>
                        })
                    }
                })}
            })
        }
        ApprovalStatus::Rejected => any(view! {
            <p class="outcome-exec" data-testid="outcome-execution" data-execution="none">"Nothing was changed."</p>
        }),
        ApprovalStatus::Expired => any(view! {
            <p class="outcome-exec" data-testid="outcome-execution" data-execution="none">
                {text(move || lapse_notice(&format_time(expires_at, offset.get())))}
            </p>
        }),
        ApprovalStatus::Pending => ().into_any(),
    };

    // The card's lines were frozen with the model's version; an edited call says what went out
    // instead, field by field (docs/adr/0122-shaping-a-call.md).
    let edited = approval
        .decided_call
        .as_ref()
        .zip(approval.edited_fields.as_ref())
        .map(|(call, fields)| {
            let shown = fields
                .iter()
                .map(|field| {
                    let value = match &call.args[field] {
                        serde_json::Value::String(text) => text.clone(),
                        serde_json::Value::Array(list) => list
                            .iter()
                            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join(", "),
                        other => other.to_string(),
                    };
                    any(view! {
                        <p class="outcome-edited-field"><span class="label">{format!("{}, as you edited it:", super::edit::label(field))}</span></p>
                        <pre class="outcome-result">{value}</pre>
                    })
                })
                .collect_view();
            any(view! { <div class="outcome-edited" data-testid="outcome-edited">{shown}</div> })
        });
    let reason = approval
        .reason
        .clone()
        .filter(|r| !r.trim().is_empty())
        .map(|r| {
            any(view! { <p class="outcome-reason"><span class="label">"Reason: "</span>{r}</p> })
        });
    let problem = outcome_problem(approval);
    // The problem line already says the resume error when it is the only reason given.
    let resume_error_said = problem.is_some() && problem == approval.resume_error;
    let problem = problem
        .map(|p| any(view! { <p class="outcome-problem" data-testid="outcome-problem">{p}</p> }));
    let resume_error = approval
        .resume_error
        .clone()
        .filter(|_| !resume_error_said)
        .map(|e| {
            any(view! {
                <p class="outcome-error" role="alert" data-testid="resume-error">
                    "The assistant could not continue: "{e}
                </p>
            })
        });

    any(view! {
        <div
            class=format!("outcome outcome-{} outcome-tone-{}", status.as_str(), tone.as_str())
            data-testid="outcome"
            data-status=status.as_str()
            data-outcome=tone.as_str()
            role="status"
        >
            {head}
            {detail}
            {edited}
            {problem}
            {reason}
            {resume_error}
        </div>
    })
}
