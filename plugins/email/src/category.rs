//! Rule-based triage of mail into categories and category paths (DESIGN §5), and the
//! synonyms table that maps an owner's word to categories.
//!
//! The kind rules, first match wins:
//! 1. a `List-Id` header, or `Precedence: list` → [`Category::Newsletters`] (mailing lists and
//!    publications);
//! 2. a sender at a social network's notification domain (facebookmail.com, linkedin.com, …) →
//!    [`Category::Social`];
//! 3. a `List-Unsubscribe` header, `Precedence: bulk|junk`, or a marketing sender (`deals@`,
//!    `offers@`, `promo@`, `marketing@`, … or a `marketing.`/`promo.`/`email.`/`news.` mail
//!    domain) → [`Category::Promotions`];
//! 4. shipping words in the subject (shipped, delivery, parcel, tracking, …), or "order" used
//!    as a shop's order ("your order", "order confirmation", "order NW-48213", not "inode
//!    order") → [`Category::Orders`];
//! 5. receipt words in the subject (receipt, invoice, payment, billing, …) →
//!    [`Category::Receipts`];
//! 6. anything else → [`Category::Personal`].
//!
//! Each message also gets a **category path** ([`category_path`]): `newsletters/<list>`,
//! `deals-promotions/<merchant>`, `social/<network>`, `updates/orders`, `updates/receipts`,
//! `personal`. The list is the List-Id's first label, the merchant or network the sender
//! domain's registrable name ("Northwind Outfitters <deals@email.northwind.example>" →
//! `deals-promotions/northwind`).
//!
//! Providers with their own buckets (Gmail's category tabs) report them as labels; each kind
//! maps to the bucket label that holds it ([`Category::bucket_label`]), and `trash_category`
//! trusts the provider's label over this triage where the account reports buckets.
//!
//! An owner's word reaches categories through [`resolve_word`]: the synonyms table
//! ([`SYNONYMS`]: "promo" → promotions, "updates" → orders and receipts, "all" → every kind),
//! then the paths that exist ("northwind" → `deals-promotions/northwind`).

use serde::{Deserialize, Serialize};

/// A message category, stored in lower case (`promotions`, `newsletters`, `orders`, `receipts`,
/// `personal`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Shops and marketing: offers, sales, discounts.
    Promotions,
    /// Mailing lists and publications (anything with `List-Id`).
    Newsletters,
    /// Order confirmations, shipping and delivery notices.
    Orders,
    /// Receipts, invoices, payment confirmations.
    Receipts,
    /// Notifications from social networks.
    Social,
    /// Everything else: mail between people (also what a message with no headers gets).
    #[default]
    Personal,
}

impl Category {
    /// Every category, in the order the rules try them.
    pub const ALL: [Category; 6] = [
        Category::Promotions,
        Category::Newsletters,
        Category::Orders,
        Category::Receipts,
        Category::Social,
        Category::Personal,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Promotions => "promotions",
            Category::Newsletters => "newsletters",
            Category::Orders => "orders",
            Category::Receipts => "receipts",
            Category::Social => "social",
            Category::Personal => "personal",
        }
    }

    /// The stored spelling back to the kind; `None` for anything else.
    pub fn parse(stored: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == stored)
    }

    /// The first segment of this kind's category paths (`deals-promotions`, `newsletters`,
    /// `updates`, `social`, `personal`).
    pub fn path_root(self) -> &'static str {
        match self {
            Category::Promotions => "deals-promotions",
            Category::Newsletters => "newsletters",
            Category::Orders | Category::Receipts => "updates",
            Category::Social => "social",
            Category::Personal => "personal",
        }
    }

    /// The provider bucket label that holds this kind, as Gmail spells its category tabs
    /// (`CATEGORY_PROMOTIONS`, `CATEGORY_UPDATES` for orders and receipts, `CATEGORY_FORUMS`
    /// for lists, `CATEGORY_SOCIAL`, `CATEGORY_PERSONAL`). DESIGN §5: where the provider has a
    /// bucket for the category, only mail carrying that label is trashed.
    pub fn bucket_label(self) -> &'static str {
        match self {
            Category::Promotions => "CATEGORY_PROMOTIONS",
            Category::Newsletters => "CATEGORY_FORUMS",
            Category::Orders | Category::Receipts => "CATEGORY_UPDATES",
            Category::Social => "CATEGORY_SOCIAL",
            Category::Personal => "CATEGORY_PERSONAL",
        }
    }

    /// The kinds one bucket label holds (`CATEGORY_UPDATES` holds orders and receipts).
    pub fn kinds_in_bucket(label: &str) -> Vec<Category> {
        Category::ALL
            .into_iter()
            .filter(|c| c.bucket_label() == label)
            .collect()
    }

    /// Resolves a word the model or owner used ("promo", "Newsletter", "shipping",
    /// "invoices") to one category through [`SYNONYMS`]; `None` when it names none or several
    /// ("updates", "all").
    pub fn from_word(word: &str) -> Option<Category> {
        match synonym(word) {
            Some([one]) => Some(*one),
            _ => None,
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The header facts the rules look at.
#[derive(Debug, Clone, Default)]
pub struct Signals<'a> {
    /// The message has a `List-Id` header.
    pub list_id: bool,
    /// The `List-Id` header's value, when present (`Rust Users <rust-users.lists.example>`).
    pub list_id_value: Option<&'a str>,
    /// The `Precedence` header (`bulk`, `list`, `junk`), when present.
    pub precedence: Option<&'a str>,
    /// The message has a `List-Unsubscribe` header.
    pub list_unsubscribe: bool,
    /// The sender's address, if any.
    pub from_address: Option<&'a str>,
    /// The subject ("" when missing).
    pub subject: &'a str,
}

/// Local parts of sender addresses that shops use for marketing.
const MARKETING_LOCAL: &[&str] = &[
    "deals",
    "deal",
    "offers",
    "offer",
    "promo",
    "promos",
    "promotions",
    "marketing",
    "sales",
    "specials",
    "shop",
    "store",
];

/// First labels of sender domains that bulk-mail services send marketing from.
const MARKETING_DOMAIN: &[&str] = &[
    "marketing",
    "promo",
    "promotions",
    "email",
    "news",
    "offers",
];

const SHIPPING_WORDS: &[&str] = &[
    "shipped",
    "shipping",
    "shipment",
    "dispatched",
    "delivery",
    "delivered",
    "parcel",
    "tracking",
];

/// Words after "order" that make it a shop's order ("order confirmation", "order #123").
const ORDER_NEXT: &[&str] = &[
    "confirmation",
    "confirmed",
    "number",
    "no",
    "status",
    "update",
];

const RECEIPT_WORDS: &[&str] = &[
    "receipt", "receipts", "invoice", "invoices", "payment", "payments", "paid", "billing",
];

/// Registrable names of social networks' notification domains.
const SOCIAL_NETWORKS: &[&str] = &[
    "facebookmail",
    "facebook",
    "linkedin",
    "twitter",
    "x",
    "instagram",
    "mastodon",
    "bsky",
    "reddit",
    "redditmail",
    "pinterest",
    "tiktok",
    "meetup",
    "strava",
    "nextdoor",
];

/// Leading labels of a mail domain that bulk senders put before the shop's own name.
const BULK_LABELS: &[&str] = &[
    "email",
    "e",
    "em",
    "mail",
    "mailer",
    "news",
    "newsletter",
    "marketing",
    "promo",
    "promotions",
    "offers",
    "info",
    "reply",
    "bounce",
    "notify",
    "notifications",
    "shop",
    "store",
    "m",
    "t",
    "go",
    "lists",
    "list",
];

/// Second-level labels under a two-letter country code that are not a name ("co.uk").
const GENERIC_SECOND_LEVEL: &[&str] = &["co", "com", "org", "net", "ac", "gov", "edu", "ne", "or"];

/// A slug for a path segment: lower-case ASCII letters, digits and `-`; other characters
/// become `-`, runs collapse, at most 40 characters; `None` when nothing is left.
fn slug(s: &str) -> Option<String> {
    let mut out = String::new();
    for c in s.trim().to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_end_matches('-').chars().take(40).collect();
    let out = out.trim_end_matches('-').to_string();
    (!out.is_empty()).then_some(out)
}

/// The registrable name of a mail domain: `email.northwind.example` → `northwind`,
/// `shop.example.co.uk` → `example`; bulk-mail labels in front are skipped.
pub fn domain_name(domain: &str) -> Option<String> {
    let labels: Vec<&str> = domain
        .trim()
        .trim_end_matches('.')
        .split('.')
        .filter(|l| !l.is_empty())
        .collect();
    let mut end = labels.len().checked_sub(1)?;
    if end == 0 {
        return slug(labels[0]);
    }
    // Drop the top-level label, and a generic second level under a country code.
    if labels[end].len() == 2 && end >= 2 && GENERIC_SECOND_LEVEL.contains(&labels[end - 1]) {
        end -= 1;
    }
    let name = labels[end - 1];
    if BULK_LABELS.contains(&name) && end >= 2 {
        return slug(labels[end - 2]);
    }
    slug(name)
}

fn domain_of(address: &str) -> Option<&str> {
    address.rsplit_once('@').map(|(_, d)| d)
}

/// The list's name from a `List-Id` value: the id between `<` and `>` (or the whole value), its
/// first label (`Rust Users <rust-users.lists.example>` → `rust-users`).
fn list_name(list_id: &str) -> Option<String> {
    let id = match (list_id.rfind('<'), list_id.rfind('>')) {
        (Some(a), Some(b)) if a < b => &list_id[a + 1..b],
        _ => list_id,
    };
    slug(id.trim().split('.').next().unwrap_or(""))
}

fn is_social_sender(address: &str) -> bool {
    domain_of(&address.to_lowercase())
        .and_then(domain_name)
        .is_some_and(|n| SOCIAL_NETWORKS.contains(&n.as_str()))
}

fn is_marketing_sender(address: &str) -> bool {
    let address = address.to_lowercase();
    let Some((local, domain)) = address.rsplit_once('@') else {
        return false;
    };
    let first_label = domain.split('.').next().unwrap_or("");
    MARKETING_LOCAL.contains(&local)
        || (domain.contains('.') && MARKETING_DOMAIN.contains(&first_label))
}

fn words(subject: &str) -> Vec<String> {
    subject
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

fn has_word(subject: &str, list: &[&str]) -> bool {
    words(subject).iter().any(|w| list.contains(&w.as_str()))
}

/// "order" as a shop's order: after "your"/"my", or before a number, an order code or a word of
/// [`ORDER_NEXT`]. Programmers' "sort in inode order" is not one.
fn is_shop_order(subject: &str) -> bool {
    let w = words(subject);
    w.iter().enumerate().any(|(i, word)| {
        if word != "order" && word != "orders" {
            return false;
        }
        let before = i.checked_sub(1).and_then(|j| w.get(j)).map(String::as_str);
        let after = w.get(i + 1).map(String::as_str);
        matches!(before, Some("your" | "my"))
            || after
                .is_some_and(|a| ORDER_NEXT.contains(&a) || a.chars().any(|c| c.is_ascii_digit()))
            || (after.is_some_and(|a| a.chars().all(|c| c.is_ascii_alphabetic()) && a.len() <= 4)
                && w.get(i + 2)
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())))
    })
}

/// Applies the rules of the module docs.
pub fn categorise(s: &Signals<'_>) -> Category {
    let precedence = s.precedence.map(|p| p.trim().to_lowercase());
    let bulk = matches!(precedence.as_deref(), Some("bulk" | "junk"));
    if s.list_id || precedence.as_deref() == Some("list") {
        Category::Newsletters
    } else if s.from_address.is_some_and(is_social_sender) {
        Category::Social
    } else if s.list_unsubscribe || bulk || s.from_address.is_some_and(is_marketing_sender) {
        Category::Promotions
    } else if has_word(s.subject, SHIPPING_WORDS) || is_shop_order(s.subject) {
        Category::Orders
    } else if has_word(s.subject, RECEIPT_WORDS) {
        Category::Receipts
    } else {
        Category::Personal
    }
}

/// The category path of a message of kind `kind` (see the module docs): the kind's path root,
/// then for lists, promotions and social mail the list's or sender's name when one can be read.
pub fn category_path(kind: Category, s: &Signals<'_>) -> String {
    let sender_name = || {
        s.from_address
            .map(str::to_lowercase)
            .as_deref()
            .and_then(domain_of)
            .and_then(domain_name)
    };
    let leaf = match kind {
        Category::Newsletters => s.list_id_value.and_then(list_name).or_else(sender_name),
        Category::Promotions | Category::Social => sender_name(),
        Category::Orders => Some("orders".to_string()),
        Category::Receipts => Some("receipts".to_string()),
        Category::Personal => None,
    };
    match leaf {
        Some(l) => format!("{}/{l}", kind.path_root()),
        None => kind.path_root().to_string(),
    }
}

/// The synonyms table (DESIGN §5): an owner's word, lower-case, and the kinds it
/// means. Words for "all mail" map to every kind, which the guards of `trash_category` refuse.
pub const SYNONYMS: &[(&str, &[Category])] = {
    use Category::*;
    const ALL: &[Category] = &Category::ALL;
    &[
        ("promotions", &[Promotions]),
        ("promotion", &[Promotions]),
        ("promo", &[Promotions]),
        ("promos", &[Promotions]),
        ("deals", &[Promotions]),
        ("deal", &[Promotions]),
        ("deals-promotions", &[Promotions]),
        ("offers", &[Promotions]),
        ("offer", &[Promotions]),
        ("sales", &[Promotions]),
        ("sale", &[Promotions]),
        ("marketing", &[Promotions]),
        ("ads", &[Promotions]),
        ("advertising", &[Promotions]),
        ("adverts", &[Promotions]),
        ("shopping", &[Promotions]),
        ("coupons", &[Promotions]),
        ("spam", &[Promotions]),
        ("newsletters", &[Newsletters]),
        ("newsletter", &[Newsletters]),
        ("lists", &[Newsletters]),
        ("list", &[Newsletters]),
        ("mailing list", &[Newsletters]),
        ("mailing lists", &[Newsletters]),
        ("digest", &[Newsletters]),
        ("digests", &[Newsletters]),
        ("subscriptions", &[Newsletters]),
        ("forums", &[Newsletters]),
        ("updates", &[Orders, Receipts]),
        ("orders", &[Orders]),
        ("order", &[Orders]),
        ("shipping", &[Orders]),
        ("shipments", &[Orders]),
        ("shipment", &[Orders]),
        ("deliveries", &[Orders]),
        ("delivery", &[Orders]),
        ("parcels", &[Orders]),
        ("parcel", &[Orders]),
        ("packages", &[Orders]),
        ("tracking", &[Orders]),
        ("receipts", &[Receipts]),
        ("receipt", &[Receipts]),
        ("invoices", &[Receipts]),
        ("invoice", &[Receipts]),
        ("payments", &[Receipts]),
        ("payment", &[Receipts]),
        ("bills", &[Receipts]),
        ("billing", &[Receipts]),
        ("social", &[Social]),
        ("social media", &[Social]),
        ("notifications", &[Social]),
        ("personal", &[Personal]),
        ("people", &[Personal]),
        ("friends", &[Personal]),
        ("family", &[Personal]),
        ("private", &[Personal]),
        ("primary", &[Personal]),
        ("all", ALL),
        ("everything", ALL),
        ("anything", ALL),
        ("email", ALL),
        ("emails", ALL),
        ("mail", ALL),
        ("mails", ALL),
        ("messages", ALL),
        ("inbox", ALL),
    ]
};

/// Words an owner puts around a category word ("my promo emails", "all the newsletters") that
/// do not change which category is meant.
const FILLER: &[&str] = &["my", "the", "of", "from", "these", "those"];
const TRAILING: &[&str] = &["emails", "email", "mails", "mail", "messages", "message"];

/// The word as the table spells it: lower-case, white space collapsed, filler words around it
/// dropped ("My Promo Emails" → "promo"); a word that is only filler stays as it was
/// ("emails"), so it still means every kind.
pub fn canonical_word(word: &str) -> String {
    let lower = word.trim().to_lowercase();
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    let whole = words.join(" ");
    while words.first().is_some_and(|w| FILLER.contains(w)) {
        words.remove(0);
    }
    while words.len() > 1 && words.last().is_some_and(|w| TRAILING.contains(w)) {
        words.pop();
    }
    // "all promos" is promos; "all" alone is everything.
    if words.len() > 1 && words[0] == "all" {
        words.remove(0);
    }
    if words.is_empty() {
        whole
    } else {
        words.join(" ")
    }
}

fn synonym(word: &str) -> Option<&'static [Category]> {
    let w = canonical_word(word);
    SYNONYMS.iter().find(|(k, _)| *k == w).map(|(_, v)| *v)
}

/// What an owner's word selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Whole kinds, from the synonyms table, in [`Category::ALL`] order.
    Kinds(Vec<Category>),
    /// Category paths that exist (a path and everything under it), sorted; with the kind each
    /// path belongs to.
    Paths(Vec<(Category, String)>),
}

impl Selection {
    /// The kinds the selection touches, in [`Category::ALL`] order, without repeats.
    pub fn kinds(&self) -> Vec<Category> {
        let mut out: Vec<Category> = match self {
            Selection::Kinds(k) => k.clone(),
            Selection::Paths(p) => p.iter().map(|(k, _)| *k).collect(),
        };
        out.sort();
        out.dedup();
        out
    }

    /// Whether it covers every kind (the "email"/"all" guard of `trash_category`).
    pub fn covers_everything(&self) -> bool {
        matches!(self, Selection::Kinds(k) if Category::ALL.iter().all(|c| k.contains(c)))
    }

    /// Names for a reply: the kinds' names, or the paths.
    pub fn names(&self) -> Vec<String> {
        match self {
            Selection::Kinds(k) => k.iter().map(|c| c.as_str().to_string()).collect(),
            Selection::Paths(p) => p.iter().map(|(_, p)| p.clone()).collect(),
        }
    }
}

/// Resolves an owner's word to categories (DESIGN §5 "resolves the owner's word to the
/// categories that exist"): the synonyms table first; else the category paths in `existing`
/// that the word names whole (`deals-promotions/northwind`), as a path prefix
/// (`newsletters`), or as a path's last segment (`northwind`, `rust-users`). `None` when it
/// names nothing.
pub fn resolve_word(word: &str, existing: &[String]) -> Option<Selection> {
    if let Some(kinds) = synonym(word) {
        return Some(Selection::Kinds(kinds.to_vec()));
    }
    let w = canonical_word(word);
    let w_slug = slug(&w).unwrap_or_default();
    if w.is_empty() {
        return None;
    }
    let mut paths: Vec<(Category, String)> = Vec::new();
    for p in existing {
        let last = p.rsplit('/').next().unwrap_or(p);
        let hit = *p == w
            || (p.starts_with(&w) && p[w.len()..].starts_with('/'))
            || (!w_slug.is_empty() && last == w_slug);
        if hit {
            if let Some(kind) = kind_of_path(p) {
                // A path prefix selects the prefix itself once, not each path under it.
                let chosen = if *p == w || last == w_slug {
                    p.clone()
                } else {
                    w.clone()
                };
                if !paths.iter().any(|(_, q)| *q == chosen) {
                    paths.push((kind, chosen));
                }
            }
        }
    }
    paths.sort_by(|a, b| a.1.cmp(&b.1));
    (!paths.is_empty()).then_some(Selection::Paths(paths))
}

/// The kind a stored category path belongs to (`updates/orders` → orders).
pub fn kind_of_path(path: &str) -> Option<Category> {
    let mut parts = path.splitn(2, '/');
    let root = parts.next()?;
    let rest = parts.next();
    match (root, rest) {
        ("updates", Some(r)) if r == "orders" || r.starts_with("orders/") => Some(Category::Orders),
        ("updates", Some(r)) if r == "receipts" || r.starts_with("receipts/") => {
            Some(Category::Receipts)
        }
        ("updates", _) => None,
        _ => Category::ALL.into_iter().find(|c| c.path_root() == root),
    }
}

#[cfg(test)]
mod tests;
