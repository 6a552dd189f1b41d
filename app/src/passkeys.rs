//! Passkeys bound to the call (ADR-0118 decision 4) in the web app: the Devices page's list of
//! the owner's passkeys (when each was added and last used) with Add and Remove, and the card's
//! approve with a passkey after its confirm step ([`approve_with_passkey`]). The WebAuthn
//! ceremonies are plain browser APIs in `passkey_client.js`; the server makes every challenge
//! and checks every answer.

use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::Deserialize;

use crate::format::format_time;
use crate::live::clock_offset;
use crate::shape::{any, flag, text};

/// One passkey as `GET /api/passkeys` lists it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PasskeyItem {
    /// Its id (to remove it by).
    pub id: String,
    /// The owner's name for it.
    pub name: String,
    /// The device that registered it.
    pub added_by: String,
    /// When it was registered.
    #[serde(deserialize_with = "iris_core::wire::rfc3339::deserialize")]
    pub created_at: DateTime<Utc>,
    /// When it last approved a card or proved a change.
    #[serde(
        default,
        deserialize_with = "iris_core::wire::rfc3339::deserialize_option"
    )]
    pub last_used_at: Option<DateTime<Utc>>,
    /// Its public key's fingerprint (`SHA256:…`), what `iris audit verify --credential` pins.
    #[serde(default)]
    pub fingerprint: Option<String>,
}

/// `GET /api/passkeys`'s answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PasskeyListing {
    /// Oldest first.
    pub passkeys: Vec<PasskeyItem>,
    /// Whether passkeys work on this server.
    pub enabled: bool,
    /// Why not, when they do not.
    pub off_reason: Option<String>,
    /// `never`, `destructive` or `approvals`.
    pub required: String,
    /// This page's address when passkeys work only at another (the browser set it: the
    /// relying party's host is not the page's, e.g. the page on 127.0.0.1 and passkeys on
    /// localhost).
    #[serde(default)]
    pub elsewhere: Option<String>,
}

impl PasskeyListing {
    /// What the setting means for the owner, in one sentence.
    pub fn requirement(&self) -> &'static str {
        match self.required.as_str() {
            "destructive" => "Approving a destructive card needs one of your passkeys.",
            "approvals" => {
                "Approving a destructive card or one that acts for you needs one of your passkeys."
            }
            _ => "New cards do not need a passkey on this server (its owner set passkeys to never); a card made while one was required still needs it.",
        }
    }
}

/// What a client call answered: `Ok` with its text, or the sentence after `failed:`.
#[cfg_attr(not(any(feature = "hydrate", test)), allow(dead_code))]
fn outcome(word: String) -> Result<String, String> {
    match word.strip_prefix("failed:") {
        Some(sentence) => Err(sentence.to_owned()),
        None => Ok(word),
    }
}

#[cfg(feature = "hydrate")]
mod client {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen(module = "/src/passkey_client.js")]
    extern "C" {
        #[wasm_bindgen(js_name = passkeyList)]
        pub fn passkey_list() -> js_sys::Promise;
        #[wasm_bindgen(js_name = addPasskey)]
        pub fn add_passkey(name: &str) -> js_sys::Promise;
        #[wasm_bindgen(js_name = removePasskey)]
        pub fn remove_passkey(id: &str) -> js_sys::Promise;
        #[wasm_bindgen(js_name = approveWithPasskey)]
        pub fn approve_with_passkey(
            id: &str,
            reason: Option<String>,
            items: Option<String>,
            edits: Option<String>,
        ) -> js_sys::Promise;
    }

    /// Awaits one of the functions above: its answer word.
    pub async fn word(promise: js_sys::Promise) -> String {
        wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_else(|| "failed:no answer from the browser".into())
    }
}

/// Approves card `id` with the owner's passkey: the card's challenge, the browser's passkey
/// prompt, and the approve with its answer (ADR-0118 decision 4). With `items` (indices into
/// the card's items) the challenge and the approve are for those items only, so the passkey
/// signs the narrowed call (docs/adr/0122-shaping-a-call.md); with `edits` (a reviewed edit's
/// JSON object, [`crate::api::ReviewedEdit::edits`]) they are for the edited call.
///
/// # Errors
/// The sentence to show on the card (cancelled, not verified, refused by the server).
pub async fn approve_with_passkey(
    id: &str,
    reason: Option<String>,
    items: Option<Vec<u32>>,
    edits: Option<String>,
) -> Result<(), String> {
    #[cfg(feature = "hydrate")]
    {
        let items = items.map(|kept| {
            format!(
                "[{}]",
                kept.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        });
        outcome(client::word(client::approve_with_passkey(id, reason, items, edits)).await)
            .map(|_| ())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (id, reason, items, edits);
        Err("approving with a passkey happens in the browser".into())
    }
}

/// The passkey list from the server, in the browser.
async fn load() -> Result<PasskeyListing, String> {
    #[cfg(feature = "hydrate")]
    {
        let text = outcome(client::word(client::passkey_list()).await)?;
        crate::codec::read_json(&text).map_err(|e| format!("the passkey list does not parse: {e}"))
    }
    #[cfg(not(feature = "hydrate"))]
    {
        Err("loading…".into())
    }
}

async fn add(name: String) -> Result<String, String> {
    #[cfg(feature = "hydrate")]
    {
        outcome(client::word(client::add_passkey(&name)).await)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = name;
        Err("in the browser only".into())
    }
}

async fn remove(id: String) -> Result<String, String> {
    #[cfg(feature = "hydrate")]
    {
        outcome(client::word(client::remove_passkey(&id)).await)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = id;
        Err("in the browser only".into())
    }
}

/// The Devices page's passkey section: the list, the setting in words, and for a control device
/// Add (named) and Remove. Passkeys off on this server: the sentence saying why.
#[component]
pub fn PasskeyPanel(
    /// A control device: may add and remove.
    can_manage: bool,
) -> impl IntoView {
    let listing = RwSignal::new(None::<Result<PasskeyListing, String>>);
    let busy = RwSignal::new(false);
    let said = RwSignal::new(None::<Result<String, String>>);
    let name = RwSignal::new(String::new());
    let reload = move || {
        leptos::task::spawn_local(async move {
            listing.try_set(Some(load().await));
        });
    };
    crate::shape::effect(reload);
    let run = move |work: std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<String, String>>>,
    >,
                    done: String| {
        busy.set(true);
        said.set(None);
        leptos::task::spawn_local(async move {
            let answer = work.await;
            busy.try_set(false);
            said.try_set(Some(answer.map(|_| done)));
            listing.try_set(Some(load().await));
        });
    };
    let on_add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let chosen = name.get_untracked().trim().to_owned();
        let chosen = if chosen.is_empty() {
            "Passkey".to_owned()
        } else {
            chosen
        };
        name.set(String::new());
        let done = format!("Passkey \u{201c}{chosen}\u{201d} added.");
        run(Box::pin(add(chosen)), done);
    };
    let offset = clock_offset();
    any(view! {
        <section class="passkey-panel" aria-labelledby="passkey-title" data-testid="passkey-panel">
            <h3 id="passkey-title" class="panel-title">"Passkeys"</h3>
            {move || match listing.get() {
                None => any(view! { <p class="page-note">"Loading passkeys…"</p> }),
                Some(Err(e)) => any(view! { <p class="device-error" role="alert">{e}</p> }),
                Some(Ok(list)) => {
                    let needs_proof = !list.passkeys.is_empty();
                    let requirement = list.requirement();
                    // Off here, or on at another address: say so, keep the list, offer no
                    // change this page cannot make.
                    let off = list.off_reason.clone().map(|why| format!("Passkeys are off on this server: {why}."));
                    let elsewhere = list.elsewhere.clone();
                    let can_manage = can_manage && off.is_none() && elsewhere.is_none();
                    let rows = list
                        .passkeys
                        .into_iter()
                        .map(|p| {
                            let id = p.id.clone();
                            let removed = format!("Passkey \u{201c}{}\u{201d} removed.", p.name);
                            let created = p.created_at;
                            let last = p.last_used_at;
                            any(view! {
                                <li class="device-row" data-testid="passkey-row">
                                    <div class="device-head">
                                        <span class="device-name">{p.name.clone()}</span>
                                    </div>
                                    <p class="device-times">
                                        "Added " {text(move || format_time(created, offset.get()))}
                                        " by " {p.added_by.clone()} " · last used "
                                        {text(move || last.map(|t| format_time(t, offset.get())).unwrap_or_else(|| "never".into()))}
                                    </p>
                                    {p.fingerprint.clone().map(|fp| any(view! {
                                        <p class="device-times passkey-fingerprint" data-testid="passkey-fingerprint">
                                            "Key " <code>{fp}</code>
                                        </p>
                                    }))}
                                    {can_manage.then(|| any(view! {
                                        <div class="device-actions">
                                            <button class="btn btn-quiet" type="button" data-testid="passkey-remove"
                                                disabled=flag(move || busy.get())
                                                on:click=move |_| run(Box::pin(remove(id.clone())), removed.clone())>
                                                "Remove"
                                            </button>
                                        </div>
                                    }))}
                                </li>
                            })
                        })
                        .collect_view();
                    any(view! {
                        <p class="plugins-intro">{requirement}</p>
                        {off.map(|why| any(view! { <p class="passkey-off" data-testid="passkeys-off">{why}</p> }))}
                        {elsewhere.map(|url| any(view! {
                            <p class="passkey-off" data-testid="passkeys-elsewhere">
                                "Passkeys work at this server's own address, not this one: "
                                <a href=url.clone()>{url.clone()}</a>
                            </p>
                        }))}
                        {(!needs_proof).then(|| any(view! {
                            <p class="page-note" data-testid="passkeys-none">"No passkey yet."</p>
                        }))}
                        <ul class="device-list" data-testid="passkey-list">{rows}</ul>
                        {can_manage.then(|| any(view! {
                            <form class="passkey-add" on:submit=on_add>
                                <label for="passkey-name">"Name"</label>
                                <input id="passkey-name" type="text" maxlength="60" placeholder="e.g. iPhone"
                                    data-testid="passkey-name"
                                    prop:value=text(move || name.get())
                                    on:input=move |ev| name.set(event_target_value(&ev))/>
                                <button class="btn" type="submit" data-testid="passkey-add" disabled=flag(move || busy.get())>
                                    "Add a passkey"
                                </button>
                            </form>
                            {needs_proof.then(|| any(view! {
                                <p class="page-note">"Adding or removing one asks for an existing passkey first."</p>
                            }))}
                        }))}
                    })
                }
            }}
            {move || said.get().map(|s| match s {
                Ok(done) => any(view! { <p class="push-note" role="status" data-testid="passkey-said">{done}</p> }),
                Err(e) => any(view! { <p class="device-error" role="alert" data-testid="passkey-error">{e}</p> }),
            })}
        </section>
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_parses_and_says_what_the_setting_means() {
        let list: PasskeyListing = serde_json::from_str(
            r#"{"passkeys":[{"id":"p1","name":"Phone","credential_id":"AQI","added_by":"laptop",
               "created_at":"2026-12-01T10:00:00Z","last_used_at":null}],
               "enabled":true,"off_reason":null,"relying_party":"localhost","required":"destructive"}"#,
        )
        .unwrap();
        assert_eq!(list.passkeys[0].name, "Phone");
        assert!(list.requirement().contains("destructive card"));
        let never = PasskeyListing {
            required: "never".into(),
            ..list
        };
        assert!(never
            .requirement()
            .contains("New cards do not need a passkey"));
    }

    #[test]
    fn failed_words_carry_their_sentence() {
        assert_eq!(outcome("ok".into()), Ok("ok".into()));
        assert_eq!(
            outcome("failed:The passkey was not used".into()),
            Err("The passkey was not used".into())
        );
    }
}
