// The browser half of Activity's history filters, called once from app/src/activity.rs when
// the page is live. The server draws the form (app/src/activity/filter_form.rs: a plain GET form
// to /activity, which is all a browser without JavaScript or before the wasm gets) and reads
// the address's query into filters (app/src/activity/filters.rs); this keeps the address in
// step with the form as the owner types and chooses, so the back button steps through the
// filters and a reload shows the same list, and tells the page to load its lists again by an
// `iris-filters` event on `window` (the page reads the address itself). It is plain JavaScript
// rather than Rust because each view, signal and closure type costs the phone's wasm its own
// copy of Leptos' code (BENCHMARKS.md "Wasm size": the form, its state and the query's parsing
// in Rust cost 30.8 KB gzip).
//
// The query is spelled as filters.rs's `HistoryFilter::to_query` spells it: the fields in the
// form's order, empty ones left out, values trimmed and percent-encoded but for RFC 3986's
// unreserved characters, so two addresses of one list are one text.

/** How long the search box waits after the last key (ms): a word typed is one search. */
const SEARCH_PAUSE_MS = 350;
/** The form's fields, in the address's order. */
const FIELDS = ['q', 'status', 'tool', 'surface', 'since', 'until'];
/** The links that unset every filter: the form's own and the one under an empty result. */
const CLEAR = '[data-testid="filter-clear"], [data-testid="no-match-clear"]';

/** The number of the last key typed: a later key (or another change) cancels an earlier pause. */
let typed = 0;
/** Whether the current history entry is the search box's own: more typing replaces it. */
let typingEntry = false;

function form() {
  return document.querySelector('form.history-filters');
}

function encode(value) {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase(),
  );
}

/** The query the form's values name (no `?`; empty when none is set). */
function queryOf(filters) {
  return FIELDS.map((name) => [name, (filters.elements[name]?.value ?? '').trim()])
    .filter(([, value]) => value !== '')
    .map(([name, value]) => `${name}=${encode(value)}`)
    .join('&');
}

function addressQuery() {
  return location.search.replace(/^\?/, '');
}

/** Puts `query` in the address (the path stays), as a new entry or in place of this one. */
function writeAddress(query, replace) {
  const url = location.pathname + (query ? `?${query}` : '') + location.hash;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
}

/** The form's "Clear" link, there only while a filter is set. */
function showClear(filters, query) {
  const clear = filters.querySelector('[data-testid="filter-clear"]');
  if (query && !clear) {
    const link = document.createElement('a');
    link.href = '/activity';
    link.className = 'btn btn-quiet filter-clear';
    link.dataset.testid = 'filter-clear';
    link.textContent = 'Clear';
    filters.querySelector('.filter-actions')?.append(link);
  } else if (!query && clear) {
    clear.remove();
  }
}

/** Tells the page that the address's filters changed: it loads its lists for them. */
function announce(filters) {
  showClear(filters, addressQuery());
  window.dispatchEvent(new Event('iris-filters'));
}

/** Shows what the form now says: the address follows (a new entry, or the search box's own
 * entry replaced while `typing`), then the lists. */
function choose(typing) {
  const filters = form();
  if (!filters) return;
  const query = queryOf(filters);
  if (query === addressQuery()) return;
  writeAddress(query, typing && typingEntry);
  typingEntry = typing;
  announce(filters);
}

/** Draws the form again from the address (the back and forward buttons). */
function redraw(filters) {
  const params = new URLSearchParams(location.search);
  for (const name of FIELDS) {
    const control = filters.elements[name];
    if (!control) continue;
    const value = (params.get(name) ?? '').trim();
    // A tool no longer offered (its plugin was removed) is still the address's filter.
    if (control.tagName === 'SELECT' && value && ![...control.options].some((o) => o.value === value)) {
      control.append(new Option(value, value));
    }
    control.value = value;
  }
}

/** Unsets every filter, and puts the keyboard in the search box. */
function clear(filters) {
  typed += 1;
  typingEntry = false;
  for (const name of FIELDS) {
    if (filters.elements[name]) filters.elements[name].value = '';
  }
  if (addressQuery() !== '') {
    writeAddress('', false);
    announce(filters);
  }
  filters.elements.q?.focus();
}

/** Starts following the form: once per page (the form is drawn once; the listeners are on the
 * document, so they hold whatever the page draws around it). */
export function attachFilters() {
  const filters = form();
  if (!filters) return;
  // The address in its one spelling (a no-script form's submission names every field, empty
  // ones too), as the server read it.
  const canonical = filters.dataset.query ?? addressQuery();
  if (canonical !== addressQuery()) {
    writeAddress(canonical, true);
    announce(filters);
  }
  filters.addEventListener('input', (event) => {
    if (event.target.name !== 'q') return;
    typed += 1;
    const key = typed;
    setTimeout(() => {
      if (typed === key) choose(true);
    }, SEARCH_PAUSE_MS);
  });
  filters.addEventListener('change', (event) => {
    if (event.target.name === 'q') return;
    typed += 1;
    choose(false);
  });
  // Live, the controls have filtered already; only a search still in its pause is left.
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    typed += 1;
    choose(false);
  });
  document.addEventListener('click', (event) => {
    const link = event.target.closest?.(CLEAR);
    const modified = event.ctrlKey || event.metaKey || event.shiftKey || event.altKey;
    if (!link || event.button !== 0 || modified) return;
    event.preventDefault();
    clear(filters);
  });
  window.addEventListener('popstate', () => {
    typed += 1;
    typingEntry = false;
    redraw(filters);
    announce(filters);
  });
}
