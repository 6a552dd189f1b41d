//! "Older cards": the pages of Activity's history below its first, loaded on demand and kept
//! by the page across refetches (each read with the address's query of the moment, so the
//! history's filters hold for them too).

use iris_core::wire::Approval;
use leptos::prelude::*;

use crate::api::older_approvals;

/// What "Older cards" has loaded so far (kept by the page across refetches).
#[derive(Clone, Copy)]
pub(super) struct Older {
    /// Cards of the older pages, newest first.
    pub(super) cards: RwSignal<Vec<Approval>>,
    /// The cursor after the last loaded page: `None` before the first load, `Some(None)` at
    /// the end.
    pub(super) cursor: RwSignal<Option<Option<String>>>,
    pub(super) loading: RwSignal<bool>,
    pub(super) error: RwSignal<Option<String>>,
    /// The address's query (the history's filters): every page is read with it.
    pub(super) query: RwSignal<String>,
}

impl Older {
    /// Forgets the loaded pages (the filters changed: they were another list's).
    pub(super) fn reset(self) {
        self.cards.set(Vec::new());
        self.cursor.set(None);
        self.error.set(None);
    }

    /// Loads the page below `from` and appends it.
    pub(super) fn load(self, from: String) {
        if self.loading.get_untracked() {
            return;
        }
        self.loading.set(true);
        self.error.set(None);
        let query = self.query.get_untracked();
        leptos::task::spawn_local(async move {
            let answer = older_approvals(from, query.clone()).await;
            self.loading.set(false);
            // A page of filters since changed belongs to no list on screen.
            if self.query.get_untracked() != query {
                return;
            }
            match answer {
                Ok(page) => {
                    // The keyboard's focus goes to the first card loaded, not to the page.
                    if let Some(first) = page.approvals.first() {
                        crate::history::focus_later(format!("line-{}", first.id));
                    }
                    self.cards.update(|cards| cards.extend(page.approvals));
                    self.cursor.set(Some(page.next));
                }
                Err(e) => self.error.set(Some(e.to_string())),
            }
        });
    }
}

impl Older {
    /// Loads again, from `from` (the fresh first page's cursor), every answered card of the
    /// range the loaded pages cover, and shows those instead: a card that entered that range
    /// since (one answered elsewhere after it waited: its place is by when it was made) shows
    /// there, and none shows twice (README: every row once while rows change); once the last
    /// page was loaded, every card to the end. Skipped while a page loads; dropped when a page
    /// was loaded meanwhile (the next refresh covers it) or a read fails (the cards shown
    /// stay).
    pub(super) fn refresh(self, from: Option<String>) {
        let Some(boundary) = self
            .cards
            .with_untracked(|cards| cards.last().map(|a| (a.created_at, a.id.clone())))
        else {
            return;
        };
        if self.loading.get_untracked() {
            return;
        }
        let cursor = self.cursor.get_untracked();
        // Once the last page was loaded the range runs to the end: a card older than every
        // loaded one (answered elsewhere after it waited) belongs at the bottom, not nowhere.
        let to_the_end = cursor == Some(None);
        let query = self.query.get_untracked();
        leptos::task::spawn_local(async move {
            let mut cards = Vec::new();
            let mut from = from;
            while let Some(before) = from {
                let Ok(page) = older_approvals(before, query.clone()).await else {
                    return;
                };
                let reached = !to_the_end
                    && page
                        .approvals
                        .last()
                        .is_none_or(|a| (a.created_at, a.id.clone()) <= boundary);
                cards.extend(
                    page.approvals
                        .into_iter()
                        .filter(|a| to_the_end || (a.created_at, a.id.clone()) >= boundary),
                );
                from = if reached { None } else { page.next };
            }
            if self.cursor.get_untracked() == cursor
                && !self.loading.get_untracked()
                && self.query.get_untracked() == query
            {
                self.cards.try_set(cards);
            }
        });
    }
}
