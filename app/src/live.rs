//! App-wide client state that is not a page's: the live-update tick fed by
//! `GET /api/events` (Server-Sent Events), whether the page is hydrated, and the browser's
//! UTC offset for times.

use leptos::prelude::*;

use crate::banner::RequestBanner;
use crate::chat::ChatState;

/// Bumped on every live event; pages that show approvals refetch when it changes.
#[derive(Clone, Copy, Debug)]
pub struct Live {
    /// Counts live events (and reconnections) since the page loaded.
    pub tick: RwSignal<u64>,
    /// Whether the live stream is connected: `false` from its error (IRIS stopped, the network
    /// dropped) until it opens again; `true` before the first try, so the server's render and
    /// a page that has not tried yet say nothing.
    pub online: RwSignal<bool>,
}

impl Live {
    /// A fresh tick at zero, online.
    pub fn new() -> Self {
        Live {
            tick: RwSignal::new(0),
            online: RwSignal::new(true),
        }
    }

    /// Something changed on the server: refetch.
    pub fn bump(&self) {
        self.tick.try_update(|t| *t += 1);
    }
}

impl Default for Live {
    fn default() -> Self {
        Self::new()
    }
}

/// `true` once the browser has hydrated the page; until then buttons stay disabled so a click
/// cannot be lost (or submit a form natively) before the app is live.
#[derive(Clone, Copy, Debug)]
pub struct Hydrated(pub RwSignal<bool>);

impl Hydrated {
    /// Not hydrated yet.
    pub fn new() -> Self {
        Hydrated(RwSignal::new(false))
    }
}

impl Default for Hydrated {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether the app is live: `true` when no [`Hydrated`] context exists (a unit test rendering
/// one component), else the context's value. The signal itself, not a `Signal` over it: each
/// signal type the app holds costs the browser's wasm its own copy of Leptos' signal code.
pub fn is_live() -> RwSignal<bool> {
    match crate::PageState::current() {
        Some(state) => state.hydrated.0,
        None => RwSignal::new(true),
    }
}

/// The cookie in which the browser keeps its offset from UTC (minutes east), so the server
/// renders times as the page will show them and nothing changes on screen when it goes live.
pub const OFFSET_COOKIE: &str = "iris_utc_offset";

/// The reader's offset from UTC in minutes (east positive). The server and the first client
/// render both take it from [`OFFSET_COOKIE`] (so they agree; `None`, UTC, on a first visit),
/// then the browser reads its own clock and keeps it in the cookie for the next page.
#[derive(Clone, Copy, Debug)]
pub struct ClientClock {
    /// Minutes east of UTC, once known.
    pub offset_minutes: RwSignal<Option<i32>>,
}

impl ClientClock {
    /// The offset the request's (server) or the document's (browser) cookie carries.
    pub fn new() -> Self {
        ClientClock {
            offset_minutes: RwSignal::new(cookie_offset()),
        }
    }

    /// Reads the browser's offset and keeps it in [`OFFSET_COOKIE`] for a year (browser only; a
    /// no-op on the server). `SameSite=Strict` like the session cookie: a page opened from
    /// another site carries no cookie at all, so the server's same-site bounce still happens.
    pub fn start(&self) {
        #[cfg(feature = "hydrate")]
        {
            let minutes_west = js_sys::Date::new_0().get_timezone_offset();
            // The offset is a whole number of minutes, far inside i32.
            #[allow(clippy::cast_possible_truncation)]
            let offset = -(minutes_west as i32);
            self.offset_minutes.set(Some(offset));
            if let Some(document) = web_sys::window().and_then(|w| w.document()) {
                let cookie =
                    format!("{OFFSET_COOKIE}={offset}; Path=/; Max-Age=31536000; SameSite=Strict");
                let _ = js_sys::Reflect::set(&document, &"cookie".into(), &cookie.into());
            }
        }
    }
}

/// The offset in a `Cookie` header's text (`a=1; iris_utc_offset=60`): a whole number of
/// minutes within ±14 h, else `None`.
pub fn offset_in_cookies(header: &str) -> Option<i32> {
    header
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == OFFSET_COOKIE)
        .and_then(|(_, value)| value.trim().parse::<i32>().ok())
        .filter(|m| (-14 * 60..=14 * 60).contains(m))
}

/// The offset this render may use: the request's cookie on the server, the document's in the
/// browser.
fn cookie_offset() -> Option<i32> {
    #[cfg(feature = "ssr")]
    {
        use_context::<axum::http::request::Parts>().and_then(|parts| {
            parts
                .headers
                .get_all(axum::http::header::COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .find_map(offset_in_cookies)
        })
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| js_sys::Reflect::get(&d, &"cookie".into()).ok())
            .and_then(|v| v.as_string())
            .and_then(|text| offset_in_cookies(&text))
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        None
    }
}

impl Default for ClientClock {
    fn default() -> Self {
        Self::new()
    }
}

/// The current offset, `None` without a [`ClientClock`] in context (the signal itself, as
/// [`is_live`] gives it).
pub fn clock_offset() -> RwSignal<Option<i32>> {
    match crate::PageState::current() {
        Some(state) => state.clock.offset_minutes,
        None => RwSignal::new(None),
    }
}

/// Opens `EventSource("/api/events")` and, on `approval.requested`, `approval.responded`,
/// `approval.lapsed` and `run.message`, bumps [`Live`]; a `run.message` for the open
/// conversation is also added to the chat at once; `approval.requested` raises the
/// [`RequestBanner`] and `approval.responded`/`approval.lapsed` clear it for that card. A (re)connection also bumps, so nothing
/// missed while disconnected stays stale. When the stream is refused for good and this browser
/// is no longer paired (its device was revoked), the page reloads to say so. Browser only; a
/// no-op on the server.
pub fn connect(live: Live, chat: ChatState, banner: RequestBanner) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::{closure::Closure, JsCast};

        let Ok(source) = web_sys::EventSource::new("/api/events") else {
            leptos::logging::warn!("IRIS: live updates are unavailable (EventSource failed)");
            return;
        };
        for name in [
            "approval.requested",
            "approval.responded",
            "approval.lapsed",
        ] {
            let on_event = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
                move |event: web_sys::MessageEvent| {
                    let approval = event.data().as_string().and_then(|text| {
                        crate::codec::read_json::<iris_core::wire::Approval>(&text).ok()
                    });
                    if let Some(approval) = approval {
                        if name == "approval.requested" {
                            // The tab that asked shows the card in its chat already.
                            if !chat.asked_here(&approval) {
                                banner.on_requested(&approval);
                            }
                        } else {
                            banner.on_settled(&approval.id);
                        }
                    }
                    live.bump();
                },
            );
            let _ =
                source.add_event_listener_with_callback(name, on_event.as_ref().unchecked_ref());
            on_event.forget();
        }
        let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(
            move |event: web_sys::MessageEvent| {
                if let Some(text) = event.data().as_string() {
                    if let Ok(message) =
                        crate::codec::read_json::<iris_core::wire::RunMessage>(&text)
                    {
                        chat.on_run_message(message);
                    }
                }
                live.bump();
            },
        );
        let _ = source
            .add_event_listener_with_callback("run.message", on_message.as_ref().unchecked_ref());
        on_message.forget();
        let on_open = Closure::<dyn FnMut(web_sys::Event)>::new(move |_event: web_sys::Event| {
            live.online.try_set(true);
            live.bump();
        });
        let _ = source.add_event_listener_with_callback("open", on_open.as_ref().unchecked_ref());
        on_open.forget();
        // The server ends a revoked device's stream and refuses to reopen it (401), and the
        // browser then stops retrying (state CLOSED). If that is because this browser is no
        // longer paired, reload: the page then says so instead of showing stale cards as if
        // still signed in (revoking ends the device's access at once).
        // Only a page that knew itself signed in reloads: the page a reload shows (not paired)
        // runs this too, and reloading it would go round for ever.
        let closed_source = source.clone();
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_event: web_sys::Event| {
            // The stream broke: the page says so until it opens again (the browser retries).
            live.online.try_set(false);
            if closed_source.ready_state() != web_sys::EventSource::CLOSED
                || chat.can_answer.get_untracked().is_none()
            {
                return;
            }
            leptos::task::spawn_local(async move {
                if let Err(crate::error::AppError::NotPaired) = crate::api::current_viewer().await {
                    if let Some(window) = web_sys::window() {
                        let _ = window.location().reload();
                    }
                }
            });
        });
        let _ = source.add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref());
        on_error.forget();
        // The stream lives as long as the page.
        std::mem::forget(source);
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (live, chat, banner);
    }
}

/// While the live stream is down ([`Live::online`] false: IRIS stopped, the network dropped),
/// a notice on every page that IRIS cannot be reached and that the page reconnects by itself,
/// so the owner knows before answering that an answer may not arrive (an answer given anyway
/// says it is not known whether it arrived). Nothing while connected, nor in the server's
/// render.
#[component]
pub fn OfflineNotice() -> impl IntoView {
    let live = crate::PageState::current()
        .map(|state| state.live)
        .unwrap_or_default();
    crate::shape::part(move || {
        (!live.online.get()).then(|| {
            crate::shape::any(view! {
                <p class="offline-notice" role="status" data-testid="offline-notice">
                    <strong>"IRIS cannot be reached right now. "</strong>
                    "This page reconnects by itself and then shows what IRIS recorded; an answer given before that may not arrive."
                </p>
            })
        })
    })
}
