//! The chat box: the owner asks, the assistant answers; a halt message links (in-app) to the
//! card on Activity. The conversation is the server's: the page shows what the server holds
//! and what it has sent since. Its id is chosen before the first message is sent and kept in
//! `localStorage` (it may also be given as `?c=ID`), and a sent message is kept there too until
//! its reply arrives, so a reload at any moment keeps the conversation: a reload in the middle
//! of a turn shows the message as sent and waits for the server's end of that turn (the turn
//! runs to its end on the server whatever the page does, DESIGN §3), its reply or its card. A
//! resumed run's reply arrives live.

use iris_core::wire::{ApprovalStatus, ChatLine, RunMessage, MAX_MESSAGE_CHARS};
use leptos::html;
use leptos::prelude::*;

use crate::api::{current_viewer, load_conversation, send_chat};
use crate::error::AppError;
use crate::format::find_card_link;
use crate::live::is_live;
use crate::shape::{any, flag, part, text};

/// Where the conversation id is remembered in the browser.
pub const STORAGE_KEY: &str = "iris.conversation_id";

/// Where a sent message waits in the browser until its reply arrives (JSON `{"conversation_id",
/// "text", "seen"}`).
pub const PENDING_KEY: &str = "iris.pending_turn";

/// How often a page that found a message still waiting for its reply asks the server again.
#[cfg(feature = "hydrate")]
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(1500);

/// How many times it asks (about five minutes, past the model's own time limit) before it says
/// the reply did not come.
#[cfg(feature = "hydrate")]
const WAIT_POLLS: u32 = 200;

/// A message sent but not yet answered on this page: what a reload finds.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PendingTurn {
    /// The conversation it was sent in.
    pub conversation_id: String,
    /// The words, trimmed.
    pub text: String,
    /// How many of the owner's lines with these words the conversation held when it was sent:
    /// the turn has ended on the server once it holds one more.
    pub seen: usize,
    /// The send failed on the way (no answer came back), so whether IRIS has the message is not
    /// known: the page waits for its turn all the same, and says so rather than "Sent".
    #[serde(default)]
    pub unconfirmed: bool,
}

impl PendingTurn {
    /// Whether `lines` (the server's conversation) hold this message's turn.
    fn ended_in(&self, lines: &[ChatLine]) -> bool {
        owner_lines_saying(lines, &self.text) > self.seen
    }
}

/// Removes the last line when it is the owner's saying `text` (this page's copy of a sent
/// message, before the server's conversation holds it).
fn drop_last_owner_line(lines: &mut Vec<ChatLine>, text: &str) {
    if lines
        .last()
        .is_some_and(|l| l.role == "owner" && l.text == text)
    {
        lines.pop();
    }
}

/// How many of `lines` are the owner's saying `text`.
fn owner_lines_saying(lines: &[ChatLine], text: &str) -> usize {
    lines
        .iter()
        .filter(|l| l.role == "owner" && l.text == text)
        .count()
}

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
    /// Send stays disabled until it says yes; `Some(false)` (a `read` device, or a browser not
    /// paired) takes the box away, leaving a line that says why, instead of refusing on send.
    pub can_answer: RwSignal<Option<bool>>,
    /// Whether the server said this browser is not paired (the line then says to pair it).
    pub unpaired: RwSignal<bool>,
    /// A message sent before this page loaded, whose reply the server has not written yet
    /// (shown as sent, with a waiting note; Send stays off until it ends).
    pub waiting: RwSignal<Option<PendingTurn>>,
    /// The words of the turn this page has in flight (sent, no answer yet).
    in_flight: RwSignal<Option<String>>,
    /// The cards this page's turns halted on: their `approval.requested` may arrive after the
    /// turn's answer, when nothing is in flight any more.
    asked: RwSignal<Vec<String>>,
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
            unpaired: RwSignal::new(false),
            waiting: RwSignal::new(None),
            in_flight: RwSignal::new(None),
            asked: RwSignal::new(Vec::new()),
            generation: RwSignal::new(0),
        }
    }

    /// Every line to show, oldest first (a message still waiting for its turn's end last).
    pub fn all_lines(&self) -> Vec<ChatLine> {
        let mut all = self.lines.get();
        all.extend(self.extra.get());
        if let Some(waiting) = self.waiting.get() {
            all.push(ChatLine {
                role: "owner".into(),
                text: waiting.text,
                approval_id: None,
                approval_status: None,
            });
        }
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
            let pending = storage()
                .and_then(|s| s.get_item(PENDING_KEY).ok().flatten())
                .and_then(|json| crate::codec::read_json::<PendingTurn>(&json).ok());
            // A message sent just before the reload starts its conversation when none was open.
            let id = id.or_else(|| pending.as_ref().map(|p| p.conversation_id.clone()));
            if let Some(id) = id {
                remember(&id);
                if let Some(pending) = pending.filter(|p| p.conversation_id == id) {
                    self.sending.set(true);
                    self.waiting.set(Some(pending));
                    self.poll_waiting(0);
                } else {
                    forget_pending();
                }
                self.conversation_id.set(Some(id));
            }
        }
    }

    /// Reloads the conversation every [`WAIT_POLL`] while a message waits for its turn's end
    /// (a plain reply has no live event); after [`WAIT_POLLS`] it says the reply did not come
    /// and gives the words back to send again.
    #[cfg(feature = "hydrate")]
    fn poll_waiting(&self, polls: u32) {
        let state = *self;
        set_timeout(
            move || {
                let Some(Some(waiting)) = state.waiting.try_get_untracked() else {
                    return;
                };
                if polls >= WAIT_POLLS {
                    state.end_waiting();
                    state.draft.set(waiting.text);
                    state.error.set(Some(
                        "Your last message has no reply yet. If no card for it shows on Activity, send it again."
                            .into(),
                    ));
                    return;
                }
                state.reload();
                state.poll_waiting(polls + 1);
            },
            WAIT_POLL,
        );
    }

    /// Ends the wait for a message sent before this page loaded.
    fn end_waiting(&self) {
        self.waiting.set(None);
        self.sending.set(false);
        #[cfg(feature = "hydrate")]
        forget_pending();
    }

    /// Asks the server who is looking and records whether this device may chat.
    pub fn learn_viewer(&self) {
        let state = *self;
        leptos::task::spawn_local(async move {
            match current_viewer().await {
                Ok(viewer) => {
                    state.can_answer.try_set(Some(viewer.can_answer));
                }
                Err(crate::error::AppError::NotPaired) => {
                    state.unpaired.try_set(true);
                    state.can_answer.try_set(Some(false));
                }
                // Not known (the server unreachable): the box stays, Send stays off.
                Err(_) => {}
            }
        });
    }

    /// Whether this page asked for `approval`: one of its turns halted on it, or its card
    /// quotes the turn this page has in flight, or the one it waits for after a reload (that
    /// page needs no banner for it).
    pub fn asked_here(&self, approval: &iris_core::wire::Approval) -> bool {
        let request = approval.card.request.trim();
        self.asked.with_untracked(|a| a.contains(&approval.id))
            || self
                .in_flight
                .with_untracked(|t| t.as_deref() == Some(request))
            || self
                .waiting
                .with_untracked(|w| w.as_ref().is_some_and(|w| w.text == request))
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
                let ended = state.waiting.with_untracked(|w| {
                    w.as_ref().is_some_and(|w| w.ended_in(&conversation.lines))
                });
                state.lines.try_set(conversation.lines);
                if ended {
                    state.end_waiting();
                }
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
                    approval_status: None,
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
        let seen = self
            .lines
            .with_untracked(|lines| owner_lines_saying(lines, &text));
        self.lines.update(|lines| {
            lines.push(ChatLine {
                role: "owner".into(),
                text: text.clone(),
                approval_id: None,
                approval_status: None,
            });
        });
        self.in_flight.set(Some(text.clone()));
        let state = *self;
        let conversation = self.conversation_id.get_untracked();
        // The id is known before the message leaves, and the message is kept, so a reload
        // while the turn runs finds both (the server starts a conversation it has not seen).
        let sent_in = conversation.clone().or_else(new_conversation_id);
        let pending = sent_in.clone().map(|conversation_id| PendingTurn {
            conversation_id,
            text: text.clone(),
            seen,
            unconfirmed: false,
        });
        #[cfg(feature = "hydrate")]
        if let Some(pending) = &pending {
            remember(&pending.conversation_id);
            keep_pending(pending);
        }
        leptos::task::spawn_local(async move {
            let answer = send_chat(text.clone(), sent_in).await;
            // Known as this page's before nothing is in flight: the card's event may come later.
            if let Some(id) = answer.as_ref().ok().and_then(|r| r.approval_id.clone()) {
                state.asked.try_update(|asked| asked.push(id));
            }
            state.in_flight.try_set(None);
            if let (Err(AppError::Transport(_)), Some(pending)) = (&answer, pending) {
                // The message may have reached the server, where the turn runs to its end
                // whatever the page hears: wait for its end as after a reload, rather than
                // offer to send it twice (DESIGN §8: when unsure, do not run it again).
                state
                    .lines
                    .try_update(|lines| drop_last_owner_line(lines, &text));
                let pending = PendingTurn {
                    unconfirmed: true,
                    ..pending
                };
                #[cfg(feature = "hydrate")]
                keep_pending(&pending);
                state.waiting.try_set(Some(pending.clone()));
                if state.conversation_id.get_untracked().is_none() {
                    // The app's effect reloads on this change.
                    state.conversation_id.try_set(Some(pending.conversation_id));
                }
                #[cfg(feature = "hydrate")]
                state.poll_waiting(0);
                return;
            }
            state.sending.try_set(false);
            #[cfg(feature = "hydrate")]
            forget_pending();
            match answer {
                Ok(reply) => {
                    state.lines.try_update(|lines| {
                        lines.push(ChatLine {
                            role: "assistant".into(),
                            text: reply.reply.clone(),
                            approval_id: reply.approval_id.clone(),
                            approval_status: None,
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
                    // The server answered with a refusal: nothing was done.
                    state
                        .lines
                        .try_update(|lines| drop_last_owner_line(lines, &text));
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

#[cfg(feature = "hydrate")]
fn keep_pending(pending: &PendingTurn) {
    if let (Some(storage), Ok(json)) = (storage(), serde_json::to_string(pending)) {
        let _ = storage.set_item(PENDING_KEY, &json);
    }
}

#[cfg(feature = "hydrate")]
fn forget_pending() {
    if let Some(storage) = storage() {
        let _ = storage.remove_item(PENDING_KEY);
    }
}

/// A new conversation's id (a random UUID from the browser); `None` outside the browser, where
/// the server chooses one.
fn new_conversation_id() -> Option<String> {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| w.crypto().ok())
            .map(|c| c.random_uuid())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        None
    }
}

/// Whether `line` is a halt message whose card still waits (amber): a linked line whose
/// row is pending, or whose status the page does not know yet (a reply just received).
fn waits_for_answer(line: &ChatLine) -> bool {
    line.approval_id.is_some()
        && matches!(line.approval_status, None | Some(ApprovalStatus::Pending))
}

/// One line's words, with the link to the card (if any) as an in-app link.
fn line_body(line: &ChatLine) -> AnyView {
    let text = line.text.clone();
    let Some(id) = line.approval_id.clone() else {
        return any(view! { <p class="chat-text">{text}</p> });
    };
    let href = format!("/activity/{id}");
    let link = move || {
        any(view! {
            <a href=href.clone() class="card-link" data-testid="chat-approval-link">
                "open the card"
            </a>
        })
    };
    match find_card_link(&text, &id) {
        Some((start, end)) => {
            let before = text[..start].to_owned();
            let after = text[end..].to_owned();
            any(view! { <p class="chat-text">{before}{link()}{after}</p> })
        }
        None => any(view! { <p class="chat-text">{text}" "{link()}</p> }),
    }
}

/// The counter shows from this many characters on (90% of [`MAX_MESSAGE_CHARS`]).
const COUNT_FROM: usize = MAX_MESSAGE_CHARS / 10 * 9;

/// The chat box: the conversation so far, a text box and Send.
#[component]
pub fn ChatPanel() -> impl IntoView {
    let chat = crate::PageState::current()
        .map(|state| state.chat)
        .unwrap_or_default();
    let live = is_live();
    let input_ref: NodeRef<html::Textarea> = NodeRef::new();
    let log_ref: NodeRef<html::Ol> = NodeRef::new();

    // The draft's length as the server counts it (trimmed, in characters).
    let length = move || chat.draft.with(|d| d.trim().chars().count());
    let too_long = move || length() > MAX_MESSAGE_CHARS;
    // Parts shown on a condition: a closure over a memo drawing an `AnyView` or nothing, not
    // `<Show>` (the Activity page's one shape for them, crate::activity).
    let waiting = Memo::new(move |_| chat.waiting.with(Option::is_some));
    let empty = Memo::new(move |_| {
        chat.lines.with(Vec::is_empty)
            && chat.extra.with(Vec::is_empty)
            && chat.waiting.with(Option::is_none)
            && !chat.view_only()
    });
    let view_only = Memo::new(move |_| chat.view_only());

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
    crate::shape::effect(move || {
        chat.lines.track();
        chat.extra.track();
        if let Some(log) = log_ref.get() {
            request_animation_frame(move || log.set_scroll_top(log.scroll_height()));
        }
    });

    any(view! {
        <section class="chat" aria-labelledby="chat-title">
            <h2 id="chat-title" class="section-title">"Ask IRIS"</h2>
            <ol class="chat-log" node_ref=log_ref data-testid="chat-log" aria-live="polite">
                {move || {
                    chat.all_lines()
                        .into_iter()
                        .map(|line| {
                            let owner = line.role == "owner";
                            let role = line.role.clone();
                            any(view! {
                                <li
                                    class="chat-line"
                                    class:owner=owner
                                    class:assistant=!owner
                                    class:halt=waits_for_answer(&line)
                                    data-testid="chat-line"
                                    data-role=role
                                >
                                    <span class="chat-who">{if owner { "You" } else { "IRIS" }}</span>
                                    {line_body(&line)}
                                </li>
                            })
                        })
                        .collect_view()
                }}
            </ol>
            {part(move || waiting.get().then(|| any(view! {
                <p class="chat-waiting" data-testid="chat-waiting" role="status">{text(move || {
                    if chat.waiting.with(|w| w.as_ref().is_some_and(|p| p.unconfirmed)) {
                        "The connection failed while sending, so IRIS may not have your message. Waiting to see whether it answers…"
                    } else {
                        "Sent. Waiting for IRIS to answer…"
                    }
                    .to_owned()
                })}</p>
            })))}
            {part(move || empty.get().then(|| any(view! {
                <p class="chat-empty">"Ask for something, e.g. “trash the promo emails from this week”. Anything that deletes data waits for your approval."</p>
            })))}
            // A device that may not ask (read only, or not paired) is not offered the box.
            {part(move || (!view_only.get()).then(|| any(view! {
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
                        readonly=flag(move || !live.get())
                        prop:value=text(move || chat.draft.get())
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
                        disabled=flag(move || {
                            chat.sending.get() || !live.get() || chat.can_answer.get() != Some(true)
                                || too_long() || length() == 0
                        })
                    >
                        {text(move || if chat.sending.get() { "Sending…" } else { "Send" }.to_owned())}
                    </button>
                </form>
            })))}
            // A counter once the message nears the limit; past it, Send is off and it says why.
            <p
                class=text(move || if too_long() { "chat-count chat-count-over" } else { "chat-count" }.to_owned())
                data-testid="chat-count"
                aria-live="polite"
                hidden=flag(move || length() <= COUNT_FROM)
            >
                {text(move || {
                    let n = length();
                    if n > MAX_MESSAGE_CHARS {
                        format!(
                            "{n} characters: at most {MAX_MESSAGE_CHARS} can be sent. Shorten it by {} to send it.",
                            n - MAX_MESSAGE_CHARS
                        )
                    } else {
                        format!("{n} of {MAX_MESSAGE_CHARS} characters")
                    }
                })}
            </p>
            {part(move || view_only.get().then(|| any(view! {
                <p class="chat-view-only" id="chat-view-only" data-testid="chat-view-only">{text(move || {
                    if chat.unpaired.get() {
                        "Pair this browser with IRIS to ask it anything."
                    } else {
                        "This device can only view."
                    }
                    .to_owned()
                })}</p>
            })))}
            {part(move || {
                chat.error
                    .get()
                    .map(|e| any(view! { <p class="chat-error" role="alert" data-testid="chat-error">{e}</p> }))
            })}
        </section>
    })
}
