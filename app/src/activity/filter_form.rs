//! The search box and filters above Activity's history: one `role="search"` form, a plain GET
//! form to `/activity` before the page is live (or without JavaScript: its "Apply" button loads
//! the filtered page from the server), and once hydrated it filters as the owner chooses (the
//! search box after a pause in typing), keeping the address's query in step
//! ([`FilterState`]), so the back button steps through the filters and a reload shows the same
//! list.
//!
//! The address is written with the browser's `history.pushState`, not Leptos' router: the app
//! has no client-side router (crate::page says why), and the page only needs its own query.

use std::time::Duration;

use leptos::prelude::*;

use crate::activity::filters::{HistoryFilter, SEARCH_MAX_CHARS, STATUSES, SURFACES};
use crate::shape::{any, part};

/// How long the search box waits after the last key before the list follows it: a word typed
/// at a normal pace is one search, not one per letter.
const SEARCH_PAUSE: Duration = Duration::from_millis(350);

/// The history's filters as the page keeps them (signals of the value types the app holds
/// anyway, crate's rules).
#[derive(Clone, Copy)]
pub struct FilterState {
    /// The filters' query ([`HistoryFilter::to_query`]): what the lists are asked for, and
    /// what the address shows.
    pub query: RwSignal<String>,
    /// Counts the times the filters changed from outside the form (the back button, Clear):
    /// the form is drawn again with them. Typing never redraws it (the caret stays).
    drawn: RwSignal<u64>,
    /// The number of the last key typed in the search box: a later key cancels the pause of
    /// an earlier one.
    typed: RwSignal<u64>,
    /// What the search box holds now (for "Apply" before the pause is over).
    searched: RwSignal<String>,
    /// Whether the address's current history entry is the search box's own: more typing
    /// replaces it, so the back button does not step back one word at a time.
    typing_entry: RwSignal<bool>,
}

impl FilterState {
    /// The state for the filters `filter` (read from the address).
    pub fn new(filter: &HistoryFilter) -> FilterState {
        FilterState {
            query: RwSignal::new(filter.to_query()),
            drawn: RwSignal::new(0),
            typed: RwSignal::new(0),
            searched: RwSignal::new(filter.q.clone().unwrap_or_default()),
            typing_entry: RwSignal::new(false),
        }
    }

    /// The filters now (untracked).
    pub fn filter(self) -> HistoryFilter {
        HistoryFilter::from_query(&self.query.get_untracked()).0
    }

    /// Shows `filter`: the lists load for it and the address says it (a new history entry,
    /// or the search box's own entry replaced while `typing`).
    fn choose(self, filter: &HistoryFilter, typing: bool) {
        let query = filter.to_query();
        if query == self.query.get_untracked() {
            return;
        }
        let replace = typing && self.typing_entry.get_untracked();
        self.typing_entry.set(typing);
        write_address(&query, replace);
        self.query.set(query);
    }

    /// Unsets every filter, draws the form empty and puts the keyboard in the search box.
    pub fn clear(self) {
        self.typed.update(|n| *n += 1);
        self.choose(&HistoryFilter::default(), false);
        self.redraw();
        crate::history::focus_later("filter-q".to_owned());
    }

    /// Draws the form again from the filters now.
    fn redraw(self) {
        self.searched
            .set(self.filter().q.clone().unwrap_or_default());
        self.drawn.update(|n| *n += 1);
    }

    /// In the browser, once live: follows the back and forward buttons (the filters of the
    /// address they reach), and writes the address's query in its one spelling (a no-script
    /// form's submission names every field, empty ones too).
    pub fn follow_address(self) {
        write_address(&self.query.get_untracked(), true);
        // The page lives as long as the document: the listener is never removed.
        let _ = window_event_listener_untyped("popstate", move |_| {
            let query = super::filters::current().0.to_query();
            self.typing_entry.set(false);
            self.typed.update(|n| *n += 1);
            if query != self.query.get_untracked() {
                self.query.set(query);
                self.redraw();
            }
        });
    }
}

/// Puts `query` in the address (the path stays), as a new history entry or in place of the
/// current one (browser only).
fn write_address(query: &str, replace: bool) {
    #[cfg(feature = "hydrate")]
    {
        let window = window();
        let path = window.location().pathname().unwrap_or_default();
        let hash = window.location().hash().unwrap_or_default();
        let url = if query.is_empty() {
            format!("{path}{hash}")
        } else {
            format!("{path}?{query}{hash}")
        };
        if let Ok(history) = window.history() {
            let none = wasm_bindgen::JsValue::NULL;
            let _ = if replace {
                history.replace_state_with_url(&none, "", Some(&url))
            } else {
                history.push_state_with_url(&none, "", Some(&url))
            };
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (query, replace);
}

/// The form, and a note for each value of the address that was left out (shown until the
/// filters change). `tools` are the tools whose calls make cards.
pub fn filter_form(state: FilterState, tools: Vec<String>, notes: Vec<String>) -> AnyView {
    let first_query = state.query.get_untracked();
    let form = part(move || {
        state.drawn.track();
        Some(form_view(state, state.filter(), &tools))
    });
    let unchanged = Memo::new(move |_| state.query.with(|q| *q == first_query));
    let notes = part(move || {
        (unchanged.get() && !notes.is_empty()).then(|| {
            let notes = notes.clone();
            any(view! {
                <ul class="filter-notes" data-testid="filter-notes">
                    {notes.into_iter().map(|note| any(view! { <li>{note}</li> })).collect_view()}
                </ul>
            })
        })
    });
    any(view! { {form}{notes} })
}

/// The form drawn with `filter`'s values: as attributes for the server's page (and a browser
/// without JavaScript), and as properties too, since a redraw in the browser changes only the
/// attributes, which no longer move a control the owner has used.
fn form_view(state: FilterState, filter: HistoryFilter, tools: &[String]) -> AnyView {
    let option = |value: String, label: String, chosen: &Option<String>| {
        let selected = chosen.as_deref() == Some(value.as_str());
        any(view! { <option value=value selected=selected>{label}</option> })
    };
    let statuses = STATUSES
        .iter()
        .map(|(value, label)| option((*value).into(), (*label).into(), &filter.status))
        .collect_view();
    let surfaces = SURFACES
        .iter()
        .map(|(value, label)| option((*value).into(), (*label).into(), &filter.surface))
        .collect_view();
    // The tools that make cards, and the address's tool when it is none of them (a plugin
    // since removed: its cards are still in the history).
    let mut tool_names = tools.to_vec();
    if let Some(tool) = filter.tool.as_ref().filter(|t| !tool_names.contains(t)) {
        tool_names.push(tool.clone());
    }
    let tools = tool_names
        .into_iter()
        .map(|name| option(name.clone(), name, &filter.tool))
        .collect_view();
    let chosen = move |name: &'static str| {
        move |ev: leptos::ev::Event| {
            let value = event_target_value(&ev);
            state.choose(&state.filter().with(name, &value), false);
        }
    };
    let is_set = Memo::new(move |_| state.query.with(|q| !q.is_empty()));
    let clear = part(move || {
        is_set.get().then(|| {
            any(view! {
                <a
                    href="/activity"
                    class="btn btn-quiet filter-clear"
                    data-testid="filter-clear"
                    on:click=move |ev: leptos::ev::MouseEvent| {
                        let modified = ev.ctrl_key() || ev.meta_key() || ev.shift_key() || ev.alt_key();
                        if ev.button() == 0 && !modified {
                            ev.prevent_default();
                            state.clear();
                        }
                    }
                >
                    "Clear"
                </a>
            })
        })
    });
    any(view! {
        <form
            class="history-filters"
            role="search"
            aria-label="Search the answered cards"
            method="get"
            action="/activity"
            data-testid="history-filters"
            on:submit=move |ev: leptos::ev::SubmitEvent| {
                // Live, the controls have filtered already; only a search still in its pause
                // is left to apply.
                ev.prevent_default();
                state.typed.update(|n| *n += 1);
                let searched = state.searched.get_untracked();
                state.choose(&state.filter().with("q", &searched), false);
            }
        >
            <div class="filter-field filter-search">
                <label for="filter-q">"Search"</label>
                <input
                    id="filter-q"
                    type="search"
                    name="q"
                    value=filter.q.clone().unwrap_or_default()
                    prop:value=filter.q.clone().unwrap_or_default()
                    maxlength=SEARCH_MAX_CHARS.to_string()
                    autocomplete="off"
                    placeholder="Title, item or request"
                    data-testid="filter-q"
                    on:input=move |ev| {
                        let value = event_target_value(&ev);
                        state.searched.set(value.clone());
                        state.typed.update(|n| *n += 1);
                        let key = state.typed.get_untracked();
                        set_timeout(
                            move || {
                                if state.typed.get_untracked() == key {
                                    state.choose(&state.filter().with("q", &value), true);
                                }
                            },
                            SEARCH_PAUSE,
                        );
                    }
                />
            </div>
            <div class="filter-field">
                <label for="filter-status">"Status"</label>
                <select id="filter-status" name="status" data-testid="filter-status" prop:value=filter.status.clone().unwrap_or_default() on:change=chosen("status")>
                    <option value="" selected=filter.status.is_none()>"Any"</option>
                    {statuses}
                </select>
            </div>
            <div class="filter-field">
                <label for="filter-tool">"Tool"</label>
                <select id="filter-tool" name="tool" data-testid="filter-tool" prop:value=filter.tool.clone().unwrap_or_default() on:change=chosen("tool")>
                    <option value="" selected=filter.tool.is_none()>"Any"</option>
                    {tools}
                </select>
            </div>
            <div class="filter-field filter-surface">
                <label for="filter-surface">"Answered on"</label>
                <select id="filter-surface" name="surface" data-testid="filter-surface" prop:value=filter.surface.clone().unwrap_or_default() on:change=chosen("surface")>
                    <option value="" selected=filter.surface.is_none()>"Any"</option>
                    {surfaces}
                </select>
            </div>
            <div class="filter-field filter-date">
                <label for="filter-since">"From"</label>
                <input
                    id="filter-since"
                    type="date"
                    name="since"
                    value=filter.since.clone().unwrap_or_default()
                    prop:value=filter.since.clone().unwrap_or_default()
                    data-testid="filter-since"
                    on:change=chosen("since")
                />
            </div>
            <div class="filter-field filter-date">
                <label for="filter-until">"To"</label>
                <input
                    id="filter-until"
                    type="date"
                    name="until"
                    value=filter.until.clone().unwrap_or_default()
                    prop:value=filter.until.clone().unwrap_or_default()
                    data-testid="filter-until"
                    on:change=chosen("until")
                />
            </div>
            <div class="filter-actions">
                <button type="submit" class="btn btn-quiet" data-testid="filter-apply">"Apply"</button>
                {clear}
            </div>
        </form>
    })
}
