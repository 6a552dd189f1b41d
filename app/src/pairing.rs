//! The pairing page (Devices, sessions, scopes): what a one-time link from
//! `iris pair` opens. It says what pairing grants (read: see cards; control: also answer them),
//! until when the link works, asks for a device name and pairs on one button. It is a plain
//! server-rendered form (no hydration needed), so it works before the app's script loads and
//! a link previewer that only fetches the page pairs nothing. The server (`server/src/pairing.rs`)
//! renders it with [`PairPage::render`].

use chrono::{DateTime, Utc};
use iris_core::wire::DeviceScope;
#[cfg(feature = "ssr")]
use leptos::prelude::*;

/// What the pairing page shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairPageState {
    /// The link can pair: the form.
    Ready {
        /// The scope the browser will get.
        scope: DeviceScope,
        /// When the link stops working.
        expires_at: DateTime<Utc>,
        /// The name in the field (a suggestion, or what was typed).
        name: String,
        /// Why the last attempt was refused (bad or taken name); the link still works.
        error: Option<String>,
        /// The device this browser is already signed in as, if any (pairing replaces it here).
        signed_in_as: Option<String>,
    },
    /// The link cannot pair (unknown, used, lapsed, refused): a heading and plain words.
    Closed {
        /// E.g. "This pairing link has lapsed".
        heading: String,
        /// What happened and what to do.
        text: String,
    },
}

/// The sentence saying what a scope may do.
pub fn scope_grant(scope: DeviceScope) -> &'static str {
    match scope {
        DeviceScope::Read => {
            "a read device: it will see every approval card as it arrives, but can never approve or reject one, and cannot chat."
        }
        DeviceScope::Control => {
            "a control device: it will see every approval card and can approve or reject it, and chat with the assistant."
        }
        // Never offered: an agent's token is made at the server, not through a link.
        DeviceScope::Agent => {
            "an agent: it may call tools through IRIS and read the cards it asked for, never answer one."
        }
    }
}

/// The pairing page.
pub struct PairPage;

impl PairPage {
    /// The whole HTML document for `state` (every text escaped by Leptos).
    #[cfg(feature = "ssr")]
    pub fn render(state: PairPageState) -> String {
        let owner = Owner::new();
        owner.with(|| {
            let body = match state {
                PairPageState::Ready {
                    scope,
                    expires_at,
                    name,
                    error,
                    signed_in_as,
                } => view! {
                    <h1>"Pair this browser with IRIS"</h1>
                    <p data-testid="pair-grant">"This link pairs this browser as " {scope_grant(scope)}</p>
                    <p class="pair-expiry">
                        {format!("It works once, until {}.", iris_core::wire::when_utc(expires_at))}
                    </p>
                    {signed_in_as.map(|n| view! {
                        <p class="pair-note">"This browser is signed in as “" {n} "”. Pairing signs it in as the new device instead."</p>
                    })}
                    {error.map(|e| view! { <p class="pair-error" role="alert" data-testid="pair-error">{e}</p> })}
                    <form method="post" class="pair-form">
                        <label for="pair-name">"Name this device"</label>
                        <input id="pair-name" name="name" type="text" required maxlength="40"
                            autocomplete="off" value=name/>
                        <p class="pair-hint">"Cards say who answered by this name. Letters, digits, spaces, - _ and . only."</p>
                        <button type="submit" class="btn btn-primary">"Pair this browser"</button>
                    </form>
                }
                .into_any(),
                PairPageState::Closed { heading, text } => view! {
                    <h1>{heading}</h1>
                    <p data-testid="pair-closed">{text}</p>
                }
                .into_any(),
            };
            view! {
                <!DOCTYPE html>
                <html lang="en">
                    <head>
                        <crate::DocumentHead/>
                        <title>"Pair a device · IRIS approvals"</title>
                    </head>
                    <body>
                        <header class="topbar">
                            <span class="brand"><span class="brand-mark" aria-hidden="true">"◉"</span>" IRIS"</span>
                            <span class="topbar-sub">"Pair a device"</span>
                        </header>
                        <main class="pair-page" data-testid="pair-page">{body}</main>
                    </body>
                </html>
            }
            .to_html()
        })
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;

    #[test]
    fn the_form_names_the_scope_and_escapes_what_was_typed() {
        let html = PairPage::render(PairPageState::Ready {
            scope: DeviceScope::Read,
            expires_at: "2026-11-30T10:10:00Z".parse().unwrap(),
            name: "<script>x</script>".into(),
            error: Some("a <b> name".into()),
            signed_in_as: None,
        });
        assert!(html.contains("a read device"), "{html}");
        assert!(html.contains("until 30 Nov 2026, 10:10:00 UTC"), "{html}");
        assert!(html.contains("method=\"post\""), "{html}");
        assert!(
            html.contains("/pkg/iris.css"),
            "the app's style sheet: {html}"
        );
        assert!(html.contains("light dark"), "both colour schemes: {html}");
        assert!(!html.contains("<script>x"), "{html}");
        assert!(!html.contains("<b> name"), "{html}");
    }

    #[test]
    fn a_closed_link_says_why() {
        let html = PairPage::render(PairPageState::Closed {
            heading: "This pairing link has lapsed".into(),
            text: "make a new link".into(),
        });
        assert!(html.contains("This pairing link has lapsed"));
        assert!(!html.contains("<form"));
    }
}
