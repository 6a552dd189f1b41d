//! "Notify this device when a card waits" (DESIGN §9 "the owner's phone"), on Activity and
//! Devices. The browser's permission is asked for only when the owner taps the control, and
//! every state says what it means and what to do: on (with a way to stop), off, blocked by the
//! browser (how to allow it), not possible in this browser, or off on the server (the setting
//! that turns it on). The work itself is plain browser APIs in `push_client.js`.

use leptos::prelude::*;

use crate::shape::any;

/// Where this browser stands with notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushState {
    /// Not known yet (the server's render, before the browser asked).
    Unknown,
    /// Being changed.
    Busy,
    /// Subscribed: this device gets a notification when a card waits.
    On,
    /// Not subscribed.
    Off,
    /// Notifications are blocked for this site.
    Denied,
    /// The permission prompt was closed without an answer.
    Dismissed,
    /// This browser has no service worker, Push API or notifications.
    Unsupported,
    /// The server has push off: its sentence (naming `IRIS_VAPID_SUBJECT`).
    ServerOff(String),
    /// Something else went wrong: what.
    Failed(String),
}

impl PushState {
    /// Reads the state word `push_client.js` resolves to.
    pub fn parse(word: &str) -> PushState {
        match word {
            "on" => PushState::On,
            "off" => PushState::Off,
            "denied" => PushState::Denied,
            "dismissed" => PushState::Dismissed,
            "unsupported" => PushState::Unsupported,
            other => match other.split_once(':') {
                Some(("server-off", sentence)) => PushState::ServerOff(sentence.to_owned()),
                Some(("failed", sentence)) => PushState::Failed(sentence.to_owned()),
                _ => PushState::Failed(format!("unexpected answer `{other}`")),
            },
        }
    }

    /// The sentence shown beside the control, if any.
    pub fn sentence(&self) -> Option<String> {
        match self {
            PushState::Unknown | PushState::Busy | PushState::Off => None,
            PushState::On => Some("This device gets a notification when a card waits.".into()),
            PushState::Denied => Some(
                "Notifications are blocked for this site. Allow them in the browser’s site settings (the icon beside the address), then tap again."
                    .into(),
            ),
            PushState::Dismissed => Some(
                "Notifications were not allowed. Tap again and choose Allow to get them.".into(),
            ),
            PushState::Unsupported => Some(
                "This browser cannot show notifications from a web page. On an iPhone, add IRIS to the Home Screen first (Share, then Add to Home Screen)."
                    .into(),
            ),
            PushState::ServerOff(sentence) => Some(format!("{sentence}.")),
            PushState::Failed(why) => Some(format!("Notifications could not be turned on: {why}.")),
        }
    }
}

#[cfg(feature = "hydrate")]
mod client {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen(module = "/src/push_client.js")]
    extern "C" {
        #[wasm_bindgen(js_name = registerWorker)]
        pub fn register_worker() -> js_sys::Promise;
        #[wasm_bindgen(js_name = pushState)]
        pub fn push_state() -> js_sys::Promise;
        #[wasm_bindgen(js_name = enablePush)]
        pub fn enable_push() -> js_sys::Promise;
        #[wasm_bindgen(js_name = disablePush)]
        pub fn disable_push() -> js_sys::Promise;
    }

    /// Awaits one of the functions above: its state word.
    pub async fn word(promise: js_sys::Promise) -> String {
        wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .ok()
            .and_then(|v| v.as_string())
            .unwrap_or_else(|| "failed:no answer from the browser".into())
    }
}

/// Installs the app's service worker (so the app can be installed and receive pushes); in the
/// browser only, once per load.
pub fn register_worker() {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async {
        let _ = wasm_bindgen_futures::JsFuture::from(client::register_worker()).await;
    });
}

/// Runs one of the client's calls and puts its answer in `state`.
fn run(state: RwSignal<PushState>, call: fn() -> PushCall) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        let promise = match call() {
            PushCall::Read => client::push_state(),
            PushCall::Enable => client::enable_push(),
            PushCall::Disable => client::disable_push(),
        };
        state.set(PushState::parse(&client::word(promise).await));
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (state, call);
}

/// Which client call [`run`] makes.
enum PushCall {
    Read,
    Enable,
    Disable,
}

/// The control: a button that asks the browser's permission when tapped, and the sentence of
/// the state it reached.
///
/// It waits for the page's data to say whether Web Push is on (`server_off`): when off, it says
/// why at once and never asks the server for the key (which would answer 404, logged by the
/// browser as a failed load).
#[component]
pub fn PushControl(
    /// `None` until the page's data has come; then why Web Push is off on this server, or
    /// `None` when it is on.
    #[prop(into)]
    server_off: Memo<Option<Option<String>>>,
) -> impl IntoView {
    let state = RwSignal::new(PushState::Unknown);
    crate::shape::effect(move || match server_off.get() {
        None => {}
        Some(Some(sentence)) => state.set(PushState::ServerOff(sentence)),
        Some(None) if state.get_untracked() == PushState::Unknown => {
            run(state, || PushCall::Read);
        }
        Some(None) => {}
    });
    let enable = move |_| {
        state.set(PushState::Busy);
        run(state, || PushCall::Enable);
    };
    let disable = move |_| {
        state.set(PushState::Busy);
        run(state, || PushCall::Disable);
    };
    any(view! {
        <div class="push-control" data-testid="push-control">
            {move || {
                let now = state.get();
                let on = now == PushState::On;
                let sentence = now.sentence();
                let waiting = matches!(now, PushState::Unknown | PushState::Busy);
                let offered = !matches!(now, PushState::Unsupported | PushState::ServerOff(_));
                any(view! {
                    {offered.then(|| if on {
                        any(view! {
                            <button type="button" class="btn btn-quiet" data-testid="push-off"
                                disabled=waiting on:click=disable>
                                "Stop notifications on this device"
                            </button>
                        })
                    } else {
                        any(view! {
                            <button type="button" class="btn btn-quiet" data-testid="push-on"
                                disabled=waiting on:click=enable>
                                {if now == PushState::Busy { "Asking…" } else { "Notify this device when a card waits" }}
                            </button>
                        })
                    })}
                    {sentence.map(|s| any(view! { <p class="push-note" data-testid="push-note" role="status">{s}</p> }))}
                })
            }}
        </div>
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_words_parse() {
        assert_eq!(PushState::parse("on"), PushState::On);
        assert_eq!(PushState::parse("off"), PushState::Off);
        assert_eq!(PushState::parse("denied"), PushState::Denied);
        assert_eq!(PushState::parse("dismissed"), PushState::Dismissed);
        assert_eq!(PushState::parse("unsupported"), PushState::Unsupported);
        assert_eq!(
            PushState::parse("server-off:Web Push is off: set IRIS_VAPID_SUBJECT"),
            PushState::ServerOff("Web Push is off: set IRIS_VAPID_SUBJECT".into())
        );
        assert_eq!(
            PushState::parse("failed:no: colon"),
            PushState::Failed("no: colon".into())
        );
        assert!(matches!(PushState::parse("what"), PushState::Failed(_)));
    }

    #[test]
    fn every_state_but_the_quiet_ones_says_what_to_do() {
        assert!(PushState::Denied.sentence().unwrap().contains("Allow them"));
        assert!(PushState::Unsupported
            .sentence()
            .unwrap()
            .contains("Home Screen"));
        assert!(PushState::On.sentence().unwrap().contains("card waits"));
        assert_eq!(
            PushState::ServerOff("Web Push is off on this server: set IRIS_VAPID_SUBJECT".into())
                .sentence()
                .unwrap(),
            "Web Push is off on this server: set IRIS_VAPID_SUBJECT."
        );
        assert_eq!(PushState::Off.sentence(), None);
    }
}
