use super::*;

fn cat(list_id: bool, unsub: bool, from: &str, subject: &str) -> Category {
    categorise(&Signals {
        list_id,
        list_unsubscribe: unsub,
        from_address: Some(from),
        subject,
        ..Signals::default()
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
    assert_eq!(
        Category::from_word("my promo emails"),
        Some(Category::Promotions)
    );
    assert_eq!(Category::from_word("email"), None);
    assert_eq!(Category::from_word("updates"), None, "two kinds");
    for c in Category::ALL {
        assert_eq!(Category::from_word(c.as_str()), Some(c));
        assert_eq!(Category::parse(c.as_str()), Some(c));
    }
}

#[test]
fn precedence_and_social_rules() {
    let with = |precedence: &str, from: &str| {
        categorise(&Signals {
            precedence: Some(precedence),
            from_address: Some(from),
            subject: "Hello",
            ..Signals::default()
        })
    };
    assert_eq!(with("list", "a@lists.example"), Category::Newsletters);
    assert_eq!(with("bulk", "hello@shop.example"), Category::Promotions);
    assert_eq!(with("junk", "hello@shop.example"), Category::Promotions);
    assert_eq!(with("first-class", "anna@example.net"), Category::Personal);
    assert_eq!(
        cat(
            false,
            true,
            "notification@facebookmail.com",
            "Anna tagged you"
        ),
        Category::Social
    );
    assert_eq!(
        cat(false, false, "messages-noreply@linkedin.com", "New message"),
        Category::Social
    );
}

#[test]
fn paths_name_the_list_and_the_merchant() {
    let path = |list_id: Option<&str>, from: &str, subject: &str| {
        let s = Signals {
            list_id: list_id.is_some(),
            list_id_value: list_id,
            list_unsubscribe: true,
            from_address: Some(from),
            subject,
            ..Signals::default()
        };
        category_path(categorise(&s), &s)
    };
    assert_eq!(
        path(
            Some("Rust Users <rust-users.lists.rust-lang.org>"),
            "a@b.org",
            "Hi"
        ),
        "newsletters/rust-users"
    );
    assert_eq!(
        path(None, "deals@email.northwind.example", "Sale"),
        "deals-promotions/northwind"
    );
    assert_eq!(
        path(None, "offers@news.paperleaf.co.uk", "Sale"),
        "deals-promotions/paperleaf"
    );
    assert_eq!(
        path(None, "x@facebookmail.com", "Hi"),
        "social/facebookmail"
    );
    let plain = Signals {
        from_address: Some("orders@shop.example"),
        subject: "Your order has shipped",
        ..Signals::default()
    };
    assert_eq!(category_path(categorise(&plain), &plain), "updates/orders");
    let receipt = Signals {
        from_address: Some("billing@power.example"),
        subject: "Payment received",
        ..Signals::default()
    };
    assert_eq!(
        category_path(categorise(&receipt), &receipt),
        "updates/receipts"
    );
    let personal = Signals {
        from_address: Some("anna@example.net"),
        subject: "Dinner?",
        ..Signals::default()
    };
    assert_eq!(category_path(categorise(&personal), &personal), "personal");
    // Odd input never panics and never gives an empty segment.
    assert_eq!(domain_name("localhost"), Some("localhost".into()));
    assert_eq!(domain_name(""), None);
    assert_eq!(domain_name("..."), None);
    assert_eq!(list_name("<>"), None);
    for p in Category::ALL.map(|c| c.path_root()) {
        assert!(kind_of_path(p).is_some() || p == "updates", "{p}");
    }
    assert_eq!(kind_of_path("updates/orders"), Some(Category::Orders));
    assert_eq!(
        kind_of_path("deals-promotions/x"),
        Some(Category::Promotions)
    );
    assert_eq!(kind_of_path("nonsense/x"), None);
}

#[test]
fn owner_words_resolve_through_synonyms_then_paths() {
    let existing: Vec<String> = [
        "deals-promotions/northwind",
        "deals-promotions/paperleaf",
        "newsletters/rust-users",
        "updates/orders",
        "personal",
    ]
    .map(String::from)
    .to_vec();
    let kinds = |w: &str| resolve_word(w, &existing).map(|s| s.kinds());
    assert_eq!(kinds("promo"), Some(vec![Category::Promotions]));
    assert_eq!(kinds("My Promo Emails"), Some(vec![Category::Promotions]));
    assert_eq!(kinds("all promos"), Some(vec![Category::Promotions]));
    assert_eq!(
        kinds("updates"),
        Some(vec![Category::Orders, Category::Receipts])
    );
    assert_eq!(
        resolve_word("Northwind", &existing),
        Some(Selection::Paths(vec![(
            Category::Promotions,
            "deals-promotions/northwind".into()
        )]))
    );
    assert_eq!(
        resolve_word("newsletters/rust-users", &existing),
        Some(Selection::Paths(vec![(
            Category::Newsletters,
            "newsletters/rust-users".into()
        )]))
    );
    assert_eq!(resolve_word("zebras", &existing), None);
    assert_eq!(resolve_word("   ", &existing), None);
    for everything in [
        "email",
        "all",
        "emails",
        "my emails",
        "everything",
        "Inbox",
        "mail",
    ] {
        let s = resolve_word(everything, &existing).expect(everything);
        assert!(s.covers_everything(), "{everything}");
    }
    assert!(!resolve_word("promo", &existing)
        .unwrap()
        .covers_everything());
    assert_eq!(canonical_word("  the   Newsletters "), "newsletters");
    assert_eq!(canonical_word("emails"), "emails");
}

#[test]
fn each_kind_has_a_bucket_label() {
    assert_eq!(Category::Promotions.bucket_label(), "CATEGORY_PROMOTIONS");
    assert_eq!(
        Category::kinds_in_bucket("CATEGORY_UPDATES"),
        vec![Category::Orders, Category::Receipts]
    );
    assert!(Category::kinds_in_bucket("INBOX").is_empty());
}
