//! The new-card banner (the phone banner): when `approval.requested` arrives on
//! `GET /api/events`, every page shows a small banner at the top naming the card and linking
//! to it. It goes away when the owner opens or dismisses it, or when that card is answered or
//! lapses (elsewhere or here).

use iris_core::wire::Approval;
use leptos::prelude::*;

use crate::shape::any;

/// The card the banner announces: its id and title.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Announced {
    /// The approval id (the link goes to `/activity/<id>`).
    pub id: String,
    /// The card's title, e.g. "Trash 5 emails".
    pub title: String,
}

/// App-wide banner state, provided as context by the app.
#[derive(Clone, Copy, Debug)]
pub struct RequestBanner {
    /// The newest requested card not yet opened, dismissed or answered.
    pub announced: RwSignal<Option<Announced>>,
}

impl RequestBanner {
    /// No banner.
    pub fn new() -> Self {
        RequestBanner {
            announced: RwSignal::new(None),
        }
    }

    /// `approval.requested`: announce this card (the newest wins).
    pub fn on_requested(&self, approval: &Approval) {
        self.announced.try_set(Some(Announced {
            id: approval.id.clone(),
            title: approval.card.title.clone(),
        }));
    }

    /// `approval.responded` or `approval.lapsed`: an announced card that is no longer waiting
    /// is not news any more.
    pub fn on_settled(&self, approval_id: &str) {
        if self
            .announced
            .with_untracked(|a| a.as_ref().is_some_and(|a| a.id == approval_id))
        {
            self.announced.try_set(None);
        }
    }

    /// Hides the banner.
    pub fn dismiss(&self) {
        self.announced.try_set(None);
    }
}

impl Default for RequestBanner {
    fn default() -> Self {
        Self::new()
    }
}

/// The banner itself: "New card waiting: <title>", an Open link and a Dismiss button; nothing
/// while there is no news. Beside it, always in the page, a polite live region says the same
/// words to a screen reader when a card arrives (a region that appears with its words is not
/// reliably read out; one that is there and changes is).
#[component]
pub fn RequestBannerView() -> impl IntoView {
    let banner = crate::PageState::current()
        .map(|state| state.banner)
        .unwrap_or_default();
    let announcement = crate::shape::text(move || {
        banner
            .announced
            .get()
            .map(|a| format!("New card waiting: {}", a.title))
            .unwrap_or_default()
    });
    let shown = crate::shape::part(move || {
        banner.announced.get().map(|announced| {
            let href = format!("/activity/{}", announced.id);
            any(view! {
                <div class="request-banner" data-testid="request-banner" data-approval-id=announced.id.clone()>
                    <p class="banner-text">
                        <strong>"New card waiting: "</strong>
                        {announced.title.clone()}
                    </p>
                    // A plain link: it loads the card's page.
                    <a href=href class="btn btn-primary" data-testid="request-banner-open" on:click=move |_| banner.dismiss()>
                        "Open"
                    </a>
                    <button type="button" class="btn btn-quiet banner-close" data-testid="request-banner-dismiss" on:click=move |_| banner.dismiss()>
                        "Dismiss"
                    </button>
                </div>
            })
        })
    });
    any(view! {
        <p class="visually-hidden" aria-live="polite" data-testid="card-announcer">{announcement}</p>
        {shown}
    })
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;

    fn render(banner: RequestBanner) -> String {
        provide_context(crate::PageState {
            banner,
            ..crate::PageState::new()
        });
        view! { <RequestBannerView/> }.to_html()
    }

    #[test]
    fn the_banner_names_the_card_and_links_to_it() {
        let html = Owner::new().with(|| {
            let banner = RequestBanner::new();
            banner.announced.set(Some(Announced {
                id: "a1".into(),
                title: "Trash <3> emails".into(),
            }));
            render(banner)
        });
        assert!(html.contains("data-testid=\"request-banner\""), "{html}");
        assert!(html.contains("href=\"/activity/a1\""), "{html}");
        assert!(html.contains("Trash &lt;3&gt; emails"), "{html}");
    }

    #[test]
    fn no_news_no_banner_and_an_answered_card_clears_it() {
        let html = Owner::new().with(|| render(RequestBanner::new()));
        assert!(!html.contains("request-banner"), "{html}");
        Owner::new().with(|| {
            let banner = RequestBanner::new();
            banner.announced.set(Some(Announced {
                id: "a1".into(),
                title: "t".into(),
            }));
            banner.on_settled("other");
            assert!(banner.announced.get_untracked().is_some());
            banner.on_settled("a1");
            assert!(banner.announced.get_untracked().is_none());
        });
    }
}
