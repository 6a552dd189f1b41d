//! Categories by simple header rules (DESIGN §5; a later issue refines the rules, keep them here).
//!
//! The rules, first match wins:
//! 1. a `List-Id` header → [`Category::Newsletters`] (mailing lists and publications);
//! 2. a `List-Unsubscribe` header, or a marketing sender (`deals@`, `offers@`, `promo@`,
//!    `marketing@`, … or a `marketing.`/`promo.`/`email.`/`news.` mail domain), without
//!    `List-Id` → [`Category::Promotions`];
//! 3. shipping words in the subject (shipped, delivery, parcel, tracking, …), or "order" used
//!    as a shop's order ("your order", "order confirmation", "order NW-48213", not "inode
//!    order") → [`Category::Orders`];
//! 4. receipt words in the subject (receipt, invoice, payment, billing, …) →
//!    [`Category::Receipts`];
//! 5. anything else → [`Category::Personal`].

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
    /// Everything else: mail between people (also what a message with no headers gets).
    #[default]
    Personal,
}

impl Category {
    /// Every category, in the order the rules try them.
    pub const ALL: [Category; 5] = [
        Category::Promotions,
        Category::Newsletters,
        Category::Orders,
        Category::Receipts,
        Category::Personal,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Promotions => "promotions",
            Category::Newsletters => "newsletters",
            Category::Orders => "orders",
            Category::Receipts => "receipts",
            Category::Personal => "personal",
        }
    }

    /// Resolves a word the model or owner used ("promo", "Newsletter", "shipping",
    /// "invoices") to a category; `None` when it names none.
    pub fn from_word(word: &str) -> Option<Category> {
        let w = word.trim().to_lowercase();
        let c = match w.as_str() {
            "promotions" | "promotion" | "promo" | "promos" | "marketing" | "offers" | "deals"
            | "sales" | "ads" | "advertising" | "shopping" => Category::Promotions,
            "newsletters" | "newsletter" | "lists" | "list" | "mailing list" | "mailing lists"
            | "digest" | "digests" | "updates" => Category::Newsletters,
            "orders" | "order" | "shipping" | "shipments" | "shipment" | "deliveries"
            | "delivery" | "parcels" | "parcel" | "packages" | "tracking" => Category::Orders,
            "receipts" | "receipt" | "invoices" | "invoice" | "payments" | "payment" | "bills"
            | "billing" => Category::Receipts,
            "personal" | "people" | "friends" | "family" | "private" => Category::Personal,
            _ => return None,
        };
        Some(c)
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
    if s.list_id {
        Category::Newsletters
    } else if s.list_unsubscribe || s.from_address.is_some_and(is_marketing_sender) {
        Category::Promotions
    } else if has_word(s.subject, SHIPPING_WORDS) || is_shop_order(s.subject) {
        Category::Orders
    } else if has_word(s.subject, RECEIPT_WORDS) {
        Category::Receipts
    } else {
        Category::Personal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(list_id: bool, unsub: bool, from: &str, subject: &str) -> Category {
        categorise(&Signals {
            list_id,
            list_unsubscribe: unsub,
            from_address: Some(from),
            subject,
        })
    }

    #[test]
    fn rules_in_order() {
        assert_eq!(
            cat(true, true, "deals@shop.example", "Sale"),
            Category::Newsletters
        );
        assert_eq!(
            cat(false, true, "hi@shop.example", "Hello"),
            Category::Promotions
        );
        assert_eq!(
            cat(false, false, "deals@shop.example", "Hello"),
            Category::Promotions
        );
        assert_eq!(
            cat(false, false, "x@email.shop.example", "Hello"),
            Category::Promotions
        );
        assert_eq!(
            cat(
                false,
                false,
                "orders@shop.example",
                "Your order has shipped"
            ),
            Category::Orders
        );
        assert_eq!(
            cat(false, false, "billing@power.example", "Payment received"),
            Category::Receipts
        );
        assert_eq!(
            cat(false, false, "anna@example.net", "Dinner?"),
            Category::Personal
        );
        // "reorder" is not the word "order", nor is a programmer's order.
        assert_eq!(
            cat(false, false, "anna@example.net", "Reorder the shelves"),
            Category::Personal
        );
        assert_eq!(
            cat(
                false,
                false,
                "s@example.com",
                "[PATCH] sort directory in inode order before statting"
            ),
            Category::Personal
        );
        for s in [
            "Order confirmation: Paperleaf Books PB-99812",
            "Your order NW-48213 has shipped",
            "Order #4471 received",
            "Update on order NW 48213",
            "Your parcel is out for delivery",
        ] {
            assert_eq!(
                cat(false, false, "orders@shop.example", s),
                Category::Orders,
                "{s}"
            );
        }
    }

    #[test]
    fn words_resolve() {
        assert_eq!(Category::from_word(" Promo "), Some(Category::Promotions));
        assert_eq!(Category::from_word("invoices"), Some(Category::Receipts));
        assert_eq!(Category::from_word("email"), None);
        for c in Category::ALL {
            assert_eq!(Category::from_word(c.as_str()), Some(c));
        }
    }
}
