//! Which page an address shows, without a client-side router.
//!
//! Activity, Plugins and Devices are separate documents: a link between them loads the page
//! from the server (its js, wasm and css come from the browser's cache: hashed and immutable
//! in a release build). The server and the browser read the same address (the request's on
//! the server, `window.location` in the browser) and so draw the same page, which hydration
//! needs. Leptos' client-side router cost 60 KB of the gzipped wasm (BENCHMARKS.md, "What each
//! part of the app costs"), for navigations that fetched each page's data from the server
//! anyway.

/// One page of the app, as its address names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Page {
    /// `/`, `/activity`, or `/activity/{id}` (that card highlighted).
    Activity(Option<String>),
    /// `/plugins`.
    Plugins,
    /// `/devices`.
    Devices,
    /// Any other address.
    NotFound,
}

impl Page {
    /// The page an address's path names (no query; a trailing `/` is ignored, an empty or
    /// nested card id is no page).
    pub fn from_path(path: &str) -> Page {
        let path = path
            .strip_suffix('/')
            .filter(|p| !p.is_empty())
            .unwrap_or(path);
        match path {
            "/" | "/activity" => Page::Activity(None),
            "/plugins" => Page::Plugins,
            "/devices" => Page::Devices,
            _ => match path.strip_prefix("/activity/") {
                Some(id) if !id.is_empty() && !id.contains('/') => Page::Activity(Some(decode(id))),
                _ => Page::NotFound,
            },
        }
    }

    /// The page of the address being shown: the request's on the server, the browser's own
    /// address in the browser.
    pub fn current() -> Page {
        Page::from_path(&current_path())
    }

    /// The wasm this page hydrates with when the site has one per set of pages.
    pub fn bundle(&self) -> Bundle {
        match self {
            Page::Plugins | Page::Devices => Bundle::Setup,
            Page::Activity(_) | Page::NotFound => Bundle::Activity,
        }
    }

    /// The page's name, its `<h1>` and the start of its tab's title: "Activity", "Plugins",
    /// "Devices", or "Page not found".
    pub fn name(&self) -> &'static str {
        match self {
            Page::Activity(_) => "Activity",
            Page::Plugins => "Plugins",
            Page::Devices => "Devices",
            Page::NotFound => "Page not found",
        }
    }

    /// The header link this page belongs to (`/activity`, `/plugins`, `/devices`), if any.
    pub fn nav_href(&self) -> Option<&'static str> {
        match self {
            Page::Activity(_) => Some("/activity"),
            Page::Plugins => Some("/plugins"),
            Page::Devices => Some("/devices"),
            Page::NotFound => None,
        }
    }
}

/// A tab's title: what it shows (a page's name, or the card a card's page is about), led by how
/// many cards wait when any do, so a tab in the background says so: "(2) Activity · IRIS
/// approvals".
pub fn document_title(shows: &str, waiting: usize) -> String {
    if waiting == 0 {
        format!("{shows} · IRIS approvals")
    } else {
        format!("({waiting}) {shows} · IRIS approvals")
    }
}

/// One of the browser's wasm files, each hydrating a set of pages (the app's `bundle-*`
/// features): a phone opening Activity does not download Plugins and Devices (BENCHMARKS.md,
/// "What each part of the app costs").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bundle {
    /// Activity and the not-found page: the site's `NAME.js`/`NAME.wasm` (`iris`).
    Activity,
    /// Plugins and Devices: `NAME-setup.js`/`NAME-setup.wasm`, hashed as `hash-setup.txt`
    /// beside the server binary names them.
    Setup,
}

impl Bundle {
    /// The setup bundle's name for a site whose wasm is `output_name` (`iris` → `iris-setup`).
    pub fn setup_name(output_name: &str) -> String {
        format!("{output_name}-setup")
    }

    /// The hash file of the setup bundle (the Activity bundle's is Leptos' own, `hash.txt`).
    pub const SETUP_HASH_FILE: &'static str = "hash-setup.txt";
}

/// Provided by the server to the pages it renders when its site has a wasm per [`Bundle`]
/// (both `bundle-*` builds): the page's hydration scripts then name its bundle. Without it
/// (e.g. cargo-leptos' one wasm with every page), every page loads the site's one wasm.
#[derive(Clone, Copy, Debug)]
pub struct BundlePerPage;

/// The options the page's hydration scripts are drawn with: `options` as they are, or with the
/// setup bundle's name and hash file on a Plugins or Devices page when [`BundlePerPage`].
pub fn hydration_options(options: &leptos::config::LeptosOptions) -> leptos::config::LeptosOptions {
    let mut scripts = options.clone();
    let split = leptos::prelude::use_context::<BundlePerPage>().is_some();
    if split && Page::current().bundle() == Bundle::Setup {
        scripts.output_name = Bundle::setup_name(&options.output_name).into();
        scripts.hash_file = Bundle::SETUP_HASH_FILE.into();
    }
    scripts
}

/// The path of the address being shown.
fn current_path() -> String {
    current_address().0
}

/// The query of the address being shown, without its `?` (the request's on the server, the
/// browser's own address in the browser), as it is: what Activity asks its lists for (the
/// server reads it into the history's filters, `crate::activity::filters`).
pub fn current_query() -> String {
    current_address().1
}

/// The path and the query (without its `?`) of the address being shown: the request's on the
/// server, `window.location` in the browser.
fn current_address() -> (String, String) {
    #[cfg(feature = "ssr")]
    {
        use leptos::prelude::use_context;
        if let Some(parts) = use_context::<axum::http::request::Parts>() {
            return (
                parts.uri.path().to_owned(),
                parts.uri.query().unwrap_or_default().to_owned(),
            );
        }
    }
    #[cfg(feature = "hydrate")]
    {
        let location = leptos::prelude::window().location();
        return (
            location.pathname().unwrap_or_default(),
            location
                .search()
                .unwrap_or_default()
                .trim_start_matches('?')
                .to_owned(),
        );
    }
    #[allow(unreachable_code)]
    ("/".to_owned(), String::new())
}

/// Percent-decodes a path segment; bytes that are not UTF-8 become U+FFFD.
fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_names_its_page() {
        assert_eq!(Page::from_path("/"), Page::Activity(None));
        assert_eq!(Page::from_path("/activity"), Page::Activity(None));
        assert_eq!(Page::from_path("/activity/"), Page::Activity(None));
        assert_eq!(
            Page::from_path("/activity/abc-1"),
            Page::Activity(Some("abc-1".into()))
        );
        assert_eq!(
            Page::from_path("/activity/a%20b"),
            Page::Activity(Some("a b".into()))
        );
        assert_eq!(Page::from_path("/activity/a/b"), Page::NotFound);
        assert_eq!(Page::from_path("/plugins"), Page::Plugins);
        assert_eq!(Page::from_path("/devices/"), Page::Devices);
        assert_eq!(Page::from_path("/nope"), Page::NotFound);
    }

    #[test]
    fn a_card_id_is_percent_decoded() {
        assert_eq!(decode("a%20b+c%E2%80%9C"), "a b+c\u{201c}");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
    }

    #[test]
    fn a_tab_title_leads_with_the_waiting_count_when_cards_wait() {
        assert_eq!(document_title("Activity", 0), "Activity · IRIS approvals");
        assert_eq!(
            document_title("Trash 3 emails", 2),
            "(2) Trash 3 emails · IRIS approvals"
        );
        assert_eq!(Page::NotFound.name(), "Page not found");
    }
}
