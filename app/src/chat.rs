//! The chat box: the owner asks, the assistant answers; a halt message links (in-app) to the
//! card on Activity. The conversation id is kept in `localStorage` (and may be given as
//! `?c=ID`), so a reload keeps the conversation; a resumed run's reply arrives live.

use iris_core::wire::{ChatLine, RunMessage, MAX_MESSAGE_CHARS};
use leptos::html;
use leptos::prelude::*;
use leptos_router::components::A;

use crate::api::{current_viewer, load_conversation, send_chat};
use crate::format::find_card_link;
use crate::live::is_live;

/// Where the conversation id is remembered in the browser.
pub const STORAGE_KEY: &str = "iris.conversation_id";

/// App-wide chat state (lives above the routes, so moving to a card keeps the conversation).
#[derive(Clone, Copy, Debug)]
pub struct ChatState {
    /// The open conversation, once there is one.
    pub conversation_id: RwSignal<Option<String>>,
    /// The lines as the server last sent them (plus this turn's until the server has them).
    pub lines: RwSignal<Vec<ChatLine>>,
    /// Live `run.message` lines the server's conversation did not hold yet at the last reload.
    pub extra: RwSignal<Vec<ChatLine>>,
    /// What is typed in the box.
    pub draft: RwSignal<String>,
    /// A turn is in flight (Send is disabled).
    pub sending: RwSignal<bool>,
    /// The last error, shown under the box.
    pub error: RwSignal<Option<String>>,
    /// Whether this device may chat (a `control` device): `None` until the server says, and
    /// Send stays disabled until it says yes; `Some(false)` (a `read` device) disables the box
    /// with the view-only line instead of refusing on send.
    pub can_answer: RwSignal<Option<bool>>,
    /// Orders reloads: only the newest one's answer is applied.
    generation: RwSignal<u64>,
}

impl ChatState {
    /// Empty state: no conversation yet.
    pub fn new() -> Self {
        ChatState {
            conversation_id: RwSignal::new(None),
            lines: RwSignal::new(Vec::new()),
            extra: RwSignal::new(Vec::new()),
            draft: RwSignal::new(String::new()),
            sending: RwSignal::new(false),
            error: RwSignal::new(None),
            can_answer: RwSignal::new(None),
            generation: RwSignal::new(0),
        }
    }

    /// Every line to show, oldest first.
    pub fn all_lines(&self) -> Vec<ChatLine> {
        let mut all = self.lines.get();
        all.extend(self.extra.get());
        all
    }

    /// Picks up the conversation from `?c=ID` or `localStorage` (browser only).
    pub fn restore(&self) {
        #[cfg(feature = "hydrate")]
        {
            let from_query = web_sys::window()
                .and_then(|w| w.location().search().ok())
                .and_then(|search| web_sys::UrlSearchParams::new_with_str(&search).ok())
                .and_then(|params| params.get("c"))
                .filter(|c| !c.is_empty());
            let id = from_query.or_else(|| {
                storage()
                    .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
                    .filter(|c| !c.is_empty())
            });
            if let Some(id) = id {
                remember(&id);
                self.conversation_id.set(Some(id));
            }
        }
    }

    /// Asks the server who is looking and records whether this device may chat.
    pub fn learn_viewer(&self) {
        let state = *self;
        leptos::task::spawn_local(async move {
            if let Ok(viewer) = current_viewer().await {
                state.can_answer.try_set(Some(viewer.can_answer));
            }
        });
    }

    /// Whether the box is shut because this device can only view.
    pub fn view_only(&self) -> bool {
        self.can_answer.get() == Some(false)
    }

    /// Fetches the conversation again (no-op without one).
    pub fn reload(&self) {
        let Some(id) = self.conversation_id.get_untracked() else {
            return;
        };
        let generation = self.generation.get_untracked() + 1;
        self.generation.set(generation);
        let state = *self;
        leptos::task::spawn_local(async move {
            let answer = load_conversation(id).await;
            if state.generation.try_get_untracked() != Some(generation) {
                return;
            }
            if let Ok(conversation) = answer {
                state.extra.try_update(|extra| {
                    extra.retain(|line| !conversation.lines.iter().any(|l| l.text == line.text));
                });
                state.lines.try_set(conversation.lines);
            }
        });
    }

    /// A live `run.message`: shown at once when it belongs to the open conversation.
    pub fn on_run_message(&self, message: RunMessage) {
        if self.conversation_id.get_untracked().as_deref() != Some(message.conversation_id.as_str())
        {
            return;
        }
        let seen = self
            .lines
            .with_untracked(|lines| lines.iter().any(|l| l.text == message.text))
            || self
                .extra
                .with_untracked(|extra| extra.iter().any(|l| l.text == message.text));
        if !seen {
            self.extra.update(|extra| {
                extra.push(ChatLine {
                    role: "assistant".into(),
                    text: message.text,
                    approval_id: message.approval_id,
                });
            });
        }
    }

    /// Sends one turn; the owner's line shows at once, the reply when it comes.
    pub fn send(&self, text: String) {
        let text = text.trim().to_owned();
        if text.is_empty()
            || self.sending.get_untracked()
            || self.can_answer.get_untracked() != Some(true)
        {
            return;
        }
        self.sending.set(true);
        self.error.set(None);
        self.draft.set(String::new());
        self.lines.update(|lines| {
            lines.push(ChatLine {
                role: "owner".into(),
                text: text.clone(),
                approval_id: None,
            });
        });
        let state = *self;
        let conversation = self.conversation_id.get_untracked();
        leptos::task::spawn_local(async move {
            let answer = send_chat(text.clone(), conversation.clone()).await;
            state.sending.try_set(false);
            match answer {
                Ok(reply) => {
                    state.lines.try_update(|lines| {
                        lines.push(ChatLine {
                            role: "assistant".into(),
                            text: reply.reply.clone(),
                            approval_id: reply.approval_id.clone(),
                        });
                    });
                    if conversation.as_deref() == Some(reply.conversation_id.as_str()) {
                        state.reload();
                    } else {
                        #[cfg(feature = "hydrate")]
                        remember(&reply.conversation_id);
                        // The app's effect reloads on this change.
                        state.conversation_id.try_set(Some(reply.conversation_id));
                    }
                }
                Err(error) => {
                    state.lines.try_update(|lines| {
                        if lines
                            .last()
                            .is_some_and(|l| l.role == "owner" && l.text == text)
                        {
                            lines.pop();
                        }
                    });
                    state.draft.try_set(text);
                    state.error.try_set(Some(error.to_string()));
                }
            }
        });
    }
}

impl Default for ChatState {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "hydrate")]
fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

#[cfg(feature = "hydrate")]
fn remember(id: &str) {
    if let Some(storage) = storage() {
        let _ = storage.set_item(STORAGE_KEY, id);
    }
}

/// One line's words, with the link to the card (if any) as an in-app link.
fn line_body(line: &ChatLine) -> AnyView {
    let text = line.text.clone();
    let Some(id) = line.approval_id.clone() else {
        return view! { <p class="chat-text">{text}</p> }.into_any();
    };
    let href = format!("/activity/{id}");
    let link = move || {
        view! {
            <A href=href.clone() attr:class="card-link" attr:data-testid="chat-approval-link">
                "open the card"
            </A>
        }
    };
    match find_card_link(&text, &id) {
        Some((start, end)) => {
            let before = text[..start].to_owned();
            let after = text[end..].to_owned();
            view! { <p class="chat-text">{before}{link()}{after}</p> }.into_any()
        }
        None => view! { <p class="chat-text">{text}" "{link()}</p> }.into_any(),
    }
}

/// The counter shows from this many characters on (90% of [`MAX_MESSAGE_CHARS`]).
const COUNT_FROM: usize = MAX_MESSAGE_CHARS / 10 * 9;

/// The chat box: the conversation so far, a text box and Send.
#[component]
pub fn ChatPanel() -> impl IntoView {
    let chat = use_context::<ChatState>().unwrap_or_default();
    let live = is_live();
    let input_ref: NodeRef<html::Textarea> = NodeRef::new();
    let log_ref: NodeRef<html::Ol> = NodeRef::new();

    // The draft's length as the server counts it (trimmed, in characters).
    let length = move || chat.draft.with(|d| d.trim().chars().count());
    let too_long = move || length() > MAX_MESSAGE_CHARS;

    let submit = move || {
        if too_long() {
            return;
        }
        let text = input_ref
            .get_untracked()
            .map(|t| t.value())
            .unwrap_or_else(|| chat.draft.get_untracked());
        chat.send(text);
    };

    // Keep the newest line in view.
    Effect::new(move |_| {
        chat.lines.track();
        chat.extra.track();
        if let Some(log) = log_ref.get() {
            request_animation_frame(move || log.set_scroll_top(log.scroll_height()));
        }
    });

    view! {
        <section class="chat" aria-labelledby="chat-title">
            <h2 id="chat-title" class="section-title">"Ask IRIS"</h2>
            <ol class="chat-log" node_ref=log_ref data-testid="chat-log" aria-live="polite">
                {move || {
                    chat.all_lines()
                        .into_iter()
                        .map(|line| {
                            let owner = line.role == "owner";
                            let role = line.role.clone();
                            view! {
                                <li
                                    class="chat-line"
                                    class:owner=owner
                                    class:assistant=!owner
                                    class:halt=line.approval_id.is_some()
                                    data-testid="chat-line"
                                    data-role=role
                                >
                                    <span class="chat-who">{if owner { "You" } else { "IRIS" }}</span>
                                    {line_body(&line)}
                                </li>
                            }
                        })
                        .collect_view()
                }}
            </ol>
            <Show when=move || chat.lines.with(Vec::is_empty) && chat.extra.with(Vec::is_empty)>
                <p class="chat-empty">"Ask for something, e.g. “trash the promo emails from this week”. Anything that deletes data waits for your approval."</p>
            </Show>
            <form
                class="chat-form"
                on:submit=move |ev| {
                    ev.prevent_default();
                    submit();
                }
            >
                <label for="chat-input" class="visually-hidden">"Message to IRIS"</label>
                <textarea
                    id="chat-input"
                    data-testid="chat-input"
                    rows="2"
                    placeholder="Ask IRIS…"
                    node_ref=input_ref
                    readonly=move || !live.get()
                    disabled=move || chat.view_only()
                    aria-describedby=move || chat.view_only().then_some("chat-view-only")
                    prop:value=move || chat.draft.get()
                    on:input:target=move |ev| chat.draft.set(ev.target().value())
                    on:keydown=move |ev| {
                        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                            ev.prevent_default();
                            submit();
                        }
                    }
                ></textarea>
                <button
                    type="submit"
                    class="btn btn-primary"
                    data-testid="chat-send"
                    disabled=move || {
                        chat.sending.get() || !live.get() || chat.can_answer.get() != Some(true)
                            || too_long()
                    }
                >
                    {move || if chat.sending.get() { "Sending…" } else { "Send" }}
                </button>
            </form>
            // A counter once the message nears the limit; past it, Send is off and it says why.
            <p
                class=move || if too_long() { "chat-count chat-count-over" } else { "chat-count" }
                data-testid="chat-count"
                aria-live="polite"
                hidden=move || length() <= COUNT_FROM
            >
                {move || {
                    let n = length();
                    if n > MAX_MESSAGE_CHARS {
                        format!(
                            "{n} characters: at most {MAX_MESSAGE_CHARS} can be sent. Shorten it by {} to send it.",
                            n - MAX_MESSAGE_CHARS
                        )
                    } else {
                        format!("{n} of {MAX_MESSAGE_CHARS} characters")
                    }
                }}
            </p>
            <Show when=move || chat.view_only()>
                <p class="chat-view-only" id="chat-view-only" data-testid="chat-view-only">"This device can only view."</p>
            </Show>
            {move || {
                chat.error
                    .get()
                    .map(|e| view! { <p class="chat-error" role="alert" data-testid="chat-error">{e}</p> })
            }}
        </section>
    }
}
