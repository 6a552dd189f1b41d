//! The search box and filters above Activity's history: one `role="search"` form, a plain GET
//! form to `/activity`, drawn by the server ([`form_html`]) with the filters of the address.
//! Before the page is live (or without JavaScript) its "Apply" button loads the filtered page
//! from the server; once live, `app/src/filter_client.js` filters as the owner chooses (the
//! search box after a pause in typing), keeping the address's query in step, so the back
//! button steps through the filters and a reload shows the same list; the page then loads its
//! lists for the address's query (crate::activity).
//!
//! The form is HTML the page places as it is (`inner_html`), not a view the browser hydrates:
//! its controls, state and the query's parsing in the wasm cost the phone 30.8 KB gzip (BENCHMARKS.md
//! "Wasm size"), and the browser needs none of it to filter.

#[cfg(feature = "ssr")]
use crate::activity::filters::{HistoryFilter, SEARCH_MAX_CHARS, STATUSES, SURFACES};

/// The form as HTML, drawn with `filter`'s values, for the tools `tools` (those whose calls
/// make cards; the filter's own tool is offered too when it is none of them: a plugin since
/// removed, whose cards are still in the history). Its `data-query` is the filter's query in
/// its one spelling ([`HistoryFilter::to_query`]), which the browser puts in the address.
#[cfg(feature = "ssr")]
pub fn form_html(filter: &HistoryFilter, tools: &[String]) -> String {
    use leptos::prelude::*;

    let option = |value: String, label: String, chosen: &Option<String>| {
        let selected = chosen.as_deref() == Some(value.as_str());
        view! { <option value=value selected=selected>{label}</option> }.into_any()
    };
    let listed = |list: &[(&str, &str)], chosen: &Option<String>| {
        list.iter()
            .map(|(value, label)| option((*value).into(), (*label).into(), chosen))
            .collect_view()
    };
    let mut tool_names = tools.to_vec();
    if let Some(tool) = filter.tool.as_ref().filter(|t| !tool_names.contains(t)) {
        tool_names.push(tool.clone());
    }
    let tool_options = tool_names
        .into_iter()
        .map(|name| option(name.clone(), name, &filter.tool))
        .collect_view();
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let clear = filter.is_set().then(|| {
        view! {
            <a href="/activity" class="btn btn-quiet filter-clear" data-testid="filter-clear">"Clear"</a>
        }
    });
    view! {
        <form
            class="history-filters"
            role="search"
            aria-label="Search the answered cards"
            method="get"
            action="/activity"
            data-testid="history-filters"
            data-query=filter.to_query()
        >
            <div class="filter-field filter-search">
                <label for="filter-q">"Search"</label>
                <input
                    id="filter-q"
                    type="search"
                    name="q"
                    value=value(&filter.q)
                    maxlength=SEARCH_MAX_CHARS.to_string()
                    autocomplete="off"
                    placeholder="Title, item or request"
                    data-testid="filter-q"
                />
            </div>
            <div class="filter-field">
                <label for="filter-status">"Status"</label>
                <select id="filter-status" name="status" data-testid="filter-status">
                    <option value="" selected=filter.status.is_none()>"Any"</option>
                    {listed(&STATUSES, &filter.status)}
                </select>
            </div>
            <div class="filter-field">
                <label for="filter-tool">"Tool"</label>
                <select id="filter-tool" name="tool" data-testid="filter-tool">
                    <option value="" selected=filter.tool.is_none()>"Any"</option>
                    {tool_options}
                </select>
            </div>
            <div class="filter-field filter-surface">
                <label for="filter-surface">"Answered on"</label>
                <select id="filter-surface" name="surface" data-testid="filter-surface">
                    <option value="" selected=filter.surface.is_none()>"Any"</option>
                    {listed(&SURFACES, &filter.surface)}
                </select>
            </div>
            <div class="filter-field filter-date">
                <label for="filter-since">"From"</label>
                <input id="filter-since" type="date" name="since" value=value(&filter.since) data-testid="filter-since"/>
            </div>
            <div class="filter-field filter-date">
                <label for="filter-until">"To"</label>
                <input id="filter-until" type="date" name="until" value=value(&filter.until) data-testid="filter-until"/>
            </div>
            <div class="filter-actions">
                <button type="submit" class="btn btn-quiet" data-testid="filter-apply">"Apply"</button>
                {clear}
            </div>
        </form>
    }
    .to_html()
}

/// Starts `app/src/filter_client.js` on the page's form (browser only; once per page): from
/// then on a change of the filters puts them in the address and fires `iris-filters` on
/// `window`.
pub fn attach() {
    #[cfg(feature = "hydrate")]
    client::attach_filters();
}

#[cfg(feature = "hydrate")]
mod client {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen(module = "/src/filter_client.js")]
    extern "C" {
        #[wasm_bindgen(js_name = attachFilters)]
        pub fn attach_filters();
    }
}
