//! The IRIS approvals web app (DESIGN §6 `app/`): Leptos components rendered on the server and
//! hydrated in the browser.
//!
//! - [`shell`] is the HTML document the server renders around [`App`].
//! - [`App`] holds the app-wide state (chat, live updates, clock) and draws the page the
//!   address names ([`page`]).
//! - [`activity`] is the Activity page: pending cards first, then answered ones, the history
//!   searched and filtered by the address's query (the form's browser half is
//!   `filter_client.js`).
//! - [`banner`] is the new-card banner every page shows on `approval.requested`.
//! - [`card`] is the approval card and its parts (`card/`: its actions, outcome and focus);
//!   [`dialog`] the confirm dialog it opens before an approval and [`undo`] its undo (both in
//!   `card/`, kept at these paths); [`trail`] its audit trail ("What happened").
//! - [`history`] is one answered card as a line of Activity's history.
//! - [`passkeys`] is the Devices page's passkeys and the approve-with-passkey step.
//! - [`error`] is [`AppError`](error::AppError), the one error every server function returns.
//! - [`card_form`] is the card's own HTML form: answering before the page's wasm has arrived.
//! - [`chat`] is the chat box that asks the assistant and links to the cards it halts on.
//! - [`api`] holds the server functions the pages call; [`backend`] the trait the server
//!   implements to answer them; [`codec`] their answers' encoding.
//! - [`live`] listens to `GET /api/events` (Server-Sent Events) in the browser.
//! - [`page`] says which page an address shows (pages are separate documents: no client-side
//!   router).
//! - [`plugins`] is the Plugins page: each plugin's tools with effect, gate and undo.
//! - [`devices`] is the Devices page: live devices, revoke, pairing links.
//! - [`push`] is "Notify this device when a card waits" (Web Push), on Activity and Devices.
//! - [`pairing`] is the page a one-time pairing link opens (rendered by the server).
//! - [`shape`] gives each kind of reactive closure in a view one type (the rule below).
//! - [`toggle`] keeps a `<details>` and the signal that remembers it in step (hydration never
//!   shuts one the owner opened first).
//! - [`format`] holds the pure wording helpers (undo sentence, result summary, times).
//!
//! Features: `ssr` (server rendering and the server functions' bodies) and `hydrate` (the
//! browser half, built for `wasm32-unknown-unknown`, entry point `hydrate()`).
//!
//! The browser's wasm stays small (a phone on a slow network loads it first: BENCHMARKS.md, "A
//! release build on a phone") by keeping down the number of types Leptos copies its generic
//! code for, so the views keep these shapes:
//! - a reactive text or attribute returns `String` (or `bool`, `Option<String>` for an
//!   attribute that may be absent), never a `&'static str` or a number;
//! - a part shown on a condition is a closure over a `Memo<bool>` drawing an `AnyView` or
//!   nothing (`Option<AnyView>`), not `<Show>`;
//! - each reactive closure goes to the view through [`shape`] (`text`, `flag`, `maybe_text`,
//!   `part`): one shared `Arc<dyn Fn>` type per kind, since every `move || …` is a type of its
//!   own and gets its own copy of Leptos' rendering code;
//! - each drawn part goes to its parent as [`shape::any`]: an `AnyView` of the element itself,
//!   the same type as that element drawn inline, not of the `View<…>` wrapper around it;
//! - a signal holds a value type the app holds anyway (`bool`, `u64`, `String`,
//!   `Option<String>`, …) and is passed as the `RwSignal` or `Memo` itself, not as a `Signal`
//!   or a `StoredValue` over it: each of those types costs its own copy of Leptos' signal code;
//! - an effect goes through [`shape::effect`] (one closure type), and app-wide state is one
//!   context, [`PageState`];
//! - a page's data comes with the page, not through a resource (Activity's: `activity/load.rs`;
//!   a resource's async machinery cost 22 KB gzip), and what only the server needs to know
//!   (the history's filters, an edit made into a call) is worked out on the server: the browser
//!   sends texts and shows sentences;
//! - JSON is read by [`codec::read_json`] only.
//!
//! Each bundle's release wasm is at most 250 KB gzip: `scripts/test.sh`'s "release wasm budget"
//! step fails over it (`scripts/lib/wasm_release.sh`; BENCHMARKS.md "Wasm size" says what each
//! part costs).

#![recursion_limit = "256"]

pub mod activity;
pub mod api;
pub mod backend;
pub mod banner;
pub mod card;
pub mod card_form;
pub mod chat;
pub mod codec;
pub mod devices;
pub mod error;
pub mod format;
pub mod history;
pub mod live;
pub mod page;
pub mod pairing;
pub mod passkeys;
pub mod plugins;
pub mod push;
pub mod shape;
pub mod toggle;
pub mod trail;

use leptos::prelude::*;
use leptos::tachys::html::attribute::custom::CustomAttribute;
use leptos_meta::HashedStylesheet;

use crate::banner::{RequestBanner, RequestBannerView};
use crate::chat::{ChatPanel, ChatState};
use crate::live::{ClientClock, Hydrated, Live, OfflineNotice};
use crate::page::Page;
use crate::shape::any;

#[cfg(feature = "ssr")]
pub use backend::AppBackend;
pub use backend::Viewer;
// The card's dialog and undo live in `card/`; their paths stay `crate::dialog`, `app::undo`.
pub use card::{dialog, undo};
pub use error::AppError;

/// What the head of every page IRIS serves holds (the app's [`shell`] and the server-rendered
/// pairing page): UTF-8, the phone viewport, both colour schemes, no favicon request, the web
/// app manifest (`/manifest.webmanifest`, installable) with its icon and theme colours, and the
/// style sheet: `/pkg/iris.css`, or in a build with hashed file names (`LEPTOS_HASH_FILES=true`)
/// `/pkg/iris.<hash>.css` as the hash file beside the server binary names it. Without
/// `options` (the pairing page) they are read from the environment, where the server read its
/// own (`iris` when `LEPTOS_OUTPUT_NAME` is unset).
#[component]
pub fn DocumentHead(
    /// The server's Leptos options (the app's shell passes them).
    #[prop(optional)]
    options: Option<LeptosOptions>,
) -> impl IntoView {
    let options = options.unwrap_or_else(|| {
        std::env::var("LEPTOS_OUTPUT_NAME")
            .ok()
            .filter(|name| !name.is_empty())
            .and_then(|_| leptos::config::get_configuration(None).ok())
            .map(|conf| conf.leptos_options)
            .unwrap_or_else(|| LeptosOptions::builder().output_name("iris").build())
    });
    view! {
        <meta charset="utf-8"/>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <meta name="color-scheme" content="light dark"/>
        <link rel="icon" href="data:,"/>
        <link rel="manifest" href="/manifest.webmanifest"/>
        <link rel="apple-touch-icon" href="/icons/iris-192.png"/>
        // The browser's own bar in the page's background colour, light and dark (`media` is
        // not among the view macro's attributes of `meta`, so it is added as a custom one).
        {view! { <meta name="theme-color" content="#f5f6f8"/> }
            .attr("media", "(prefers-color-scheme: light)")}
        {view! { <meta name="theme-color" content="#0f1217"/> }
            .attr("media", "(prefers-color-scheme: dark)")}
        <HashedStylesheet options/>
    }
}

/// The HTML document around [`App`]: head with the stylesheet (see [`DocumentHead`]), the
/// title and the hydration scripts (`/pkg/iris.js` and its wasm, or their hashed names), body
/// with the app. The title is plain HTML naming the page ([`page::document_title`]); drawn by
/// `App` through leptos_meta it cost the phone's wasm 4.5 KB gzip (BENCHMARKS.md), so the
/// Activity page sets the waiting count and a card's title into it itself, once live. It declares both colour schemes (`color-scheme: light dark`), so the browser's own parts (form controls, scroll
/// bars, the page before the style sheet loads) follow the owner's setting as the style
/// sheet's dark palette does. Pass it to `leptos_axum`'s
/// `leptos_routes_with_context` as the app function (`move || shell(options.clone())`).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let scripts = page::hydration_options(&options);
    let title = page::document_title(Page::current().name(), 0);
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <DocumentHead options/>
                <title>{title}</title>
                <HydrationScripts options=scripts/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The application: app-wide state, the header with its page links, the page the address
/// names ([`Page`]: `/`, `/activity`, `/activity/{id}` show the Activity page, `/plugins` the
/// Plugins page, `/devices` the Devices page; any other address says the page does not exist,
/// with status 404) and the chat beside it.
#[component]
pub fn App() -> impl IntoView {
    let state = PageState::new();
    provide_context(state);
    let PageState {
        live,
        chat,
        clock,
        hydrated,
        banner,
        ..
    } = state;

    // Effects only run in the browser, after hydration.
    crate::shape::effect(move || {
        hydrated.0.set(true);
        clock.start();
        chat.restore();
        chat.learn_viewer();
        live::connect(live, chat, banner);
        push::register_worker();
    });
    // Refetch the conversation on every live event (and once at start, after `restore`).
    crate::shape::effect(move || {
        live.tick.track();
        chat.conversation_id.track();
        chat.reload();
    });

    let page = Page::current();
    let current = page.nav_href();
    // The header's link to the page shown says so (`aria-current="page"`), as screen readers
    // expect and the style sheet shows.
    let nav_link = move |href: &'static str, label: &'static str| {
        any(view! {
            <a href=href aria-current=(current == Some(href)).then_some("page")>{label}</a>
        })
    };
    let content = match page {
        Page::Activity(focus) => activity_page(focus),
        Page::Plugins => setup_page(|| {
            use crate::plugins::PluginsPage;
            any(view! { <PluginsPage/> })
        }),
        Page::Devices => setup_page(|| {
            use crate::devices::DevicesPage;
            any(view! { <DevicesPage/> })
        }),
        Page::NotFound => {
            #[cfg(feature = "ssr")]
            if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
                response.set_status(axum::http::StatusCode::NOT_FOUND);
            }
            any(view! {
                <h1 class="section-title">"Page not found"</h1>
                <p class="page-note">"This page does not exist."</p>
            })
        }
    };

    any(view! {
        <header class="topbar">
            <a href="/activity" class="brand">
                <span class="brand-mark" aria-hidden="true">"◉"</span>
                " IRIS"
            </a>
            <span class="topbar-sub">"Approvals"</span>
            <nav class="topnav" aria-label="Pages">
                {nav_link("/activity", "Activity")}
                {nav_link("/plugins", "Plugins")}
                {nav_link("/devices", "Devices")}
            </nav>
        </header>
        <OfflineNotice/>
        <RequestBannerView/>
        <main class="layout">
            <aside class="chat-col" aria-label="Chat">
                <ChatPanel/>
            </aside>
            <div class="cards-col">{content}</div>
        </main>
    })
}

/// The app-wide state every part of the page reads, provided once by [`App`] as one context
/// (`PageState::current`): each context type costs the browser's wasm its own copy of Leptos'
/// context code (BENCHMARKS.md "Wasm size").
#[derive(Clone, Copy, Debug)]
pub struct PageState {
    /// Live updates ([`Live`]).
    pub live: Live,
    /// The chat ([`ChatState`]).
    pub chat: ChatState,
    /// The reader's clock ([`ClientClock`]).
    pub clock: ClientClock,
    /// Whether the page is live ([`Hydrated`]).
    pub hydrated: Hydrated,
    /// The new-card banner ([`RequestBanner`]).
    pub banner: RequestBanner,
    /// The card the owner last answered on this page ([`card::AnsweredHere`]).
    pub answered_here: card::AnsweredHere,
}

impl PageState {
    /// Fresh state: not live, no conversation, no banner, nothing answered.
    pub fn new() -> PageState {
        PageState {
            live: Live::new(),
            chat: ChatState::new(),
            clock: ClientClock::new(),
            hydrated: Hydrated::new(),
            banner: RequestBanner::new(),
            answered_here: card::AnsweredHere(RwSignal::new(None)),
        }
    }

    /// The page's state, or `None` outside [`App`] (a unit test rendering one component).
    pub fn current() -> Option<PageState> {
        use_context::<PageState>()
    }
}

impl Default for PageState {
    fn default() -> Self {
        Self::new()
    }
}

/// The Activity page, except in the setup bundle's wasm (`bundle-setup`), which never
/// hydrates it (the server names the Activity bundle on that page: [`page::Bundle`]).
fn activity_page(focus: Option<String>) -> AnyView {
    #[cfg(any(feature = "ssr", not(feature = "bundle-setup")))]
    {
        use crate::activity::ActivityPage;
        return any(view! { <ActivityPage focus/> });
    }
    #[allow(unreachable_code)]
    {
        let _ = focus;
        ().into_any()
    }
}

/// A Plugins or Devices page, except in the Activity bundle's wasm (`bundle-activity`), which
/// never hydrates them.
fn setup_page(page: impl FnOnce() -> AnyView) -> AnyView {
    #[cfg(any(feature = "ssr", not(feature = "bundle-activity")))]
    return page();
    #[allow(unreachable_code)]
    {
        let _ = page;
        ().into_any()
    }
}

/// The browser entry point: hydrates the server-rendered [`App`].
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
