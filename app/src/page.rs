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

/// The path of the address being shown.
fn current_path() -> String {
    #[cfg(feature = "ssr")]
    {
        use leptos::prelude::use_context;
        if let Some(parts) = use_context::<axum::http::request::Parts>() {
            return parts.uri.path().to_owned();
        }
    }
    #[cfg(feature = "hydrate")]
    {
        return leptos::prelude::window()
            .location()
            .pathname()
            .unwrap_or_default();
    }
    #[allow(unreachable_code)]
    "/".to_owned()
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
}
