//! Turns a raw RFC 5322 message into the header facts the local store keeps.
//!
//! Parsing never fails: a message without Date or Message-ID, with broken MIME or raw 8-bit
//! headers is stored with whatever parsed (DESIGN §5: a malformed message never stops a sync).
//! The parser runs under `catch_unwind` because one hostile file must not take the sync down
//! with it, whatever the parsing library does with it.

use chrono::{DateTime, Utc};
use mail_parser::{Address, HeaderValue, MessageParser};
use serde::{Deserialize, Serialize};

use crate::category::{categorise, category_path, Category, Signals};

/// Longest snippet kept, in characters.
pub const SNIPPET_CHARS: usize = 160;

/// One mailbox of an address header.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Person {
    /// Display name, if any.
    pub name: Option<String>,
    /// The address, if any.
    pub address: Option<String>,
}

/// What the store keeps of one message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedHeaders {
    /// Message-ID without angle brackets.
    pub message_id: Option<String>,
    /// First In-Reply-To message id, without angle brackets.
    pub in_reply_to: Option<String>,
    /// References, oldest first, without angle brackets.
    pub references: Vec<String>,
    /// Subject with folding and runs of white space collapsed ("" when missing).
    pub subject: String,
    /// The first From mailbox.
    pub from: Person,
    /// To mailboxes.
    pub to: Vec<Person>,
    /// Cc mailboxes.
    pub cc: Vec<Person>,
    /// The Date header in UTC; `None` when missing or invalid.
    pub date: Option<DateTime<Utc>>,
    /// The start of the text body, white space collapsed, at most [`SNIPPET_CHARS`].
    pub snippet: String,
    /// The category by the rules of [`crate::category`].
    pub category: Category,
    /// The category path (`deals-promotions/northwind`, `updates/orders`, `personal`; see
    /// [`crate::category::category_path`]).
    pub category_path: String,
    /// False when the parser gave up, or Message-ID or Date is missing: stored anyway.
    pub complete: bool,
}

/// Collapses every run of white space (including header folding) into one space and trims; drops
/// NUL characters (PostgreSQL text cannot hold them) and Unicode bidirectional controls (U+202A
/// to U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C): a sender's subject must not reorder
/// the rest of a card line ("… — Sender, date") the owner reads before approving.
pub fn collapse_ws(s: &str) -> String {
    let visible: String = s.chars().filter(|c| !is_bidi_control(*c)).collect();
    drop_nul(&visible.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Whether `c` is a Unicode bidirectional formatting character.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// `s` without NUL characters. A message may carry them (raw, or decoded from an encoded word or
/// a quoted-printable body), but PostgreSQL text cannot hold them, so no stored string has one,
/// on either engine (the same rows on both; a NUL never fails a sync).
fn drop_nul(s: &str) -> String {
    s.replace('\0', "")
}

fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", s[..i].trim_end()),
        None => s.to_string(),
    }
}

fn strip_brackets(s: &str) -> Option<String> {
    let s = drop_nul(s);
    let t = s
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .trim();
    (!t.is_empty()).then(|| t.to_string())
}

fn id_list(v: &HeaderValue<'_>) -> Vec<String> {
    match v {
        HeaderValue::Text(t) => t.split_whitespace().filter_map(strip_brackets).collect(),
        HeaderValue::TextList(l) => l.iter().filter_map(|t| strip_brackets(t)).collect(),
        _ => Vec::new(),
    }
}

fn people(a: Option<&Address<'_>>) -> Vec<Person> {
    a.map(|a| {
        a.iter()
            .map(|p| Person {
                name: p.name().map(collapse_ws).filter(|n| !n.is_empty()),
                address: p
                    .address()
                    .map(|s| drop_nul(s.trim()).trim().to_string())
                    .filter(|s| !s.is_empty()),
            })
            .filter(|p| p.name.is_some() || p.address.is_some())
            .collect()
    })
    .unwrap_or_default()
}

/// Parses `raw`; never fails (see the module docs).
pub fn parse_message(raw: &[u8]) -> ParsedHeaders {
    match std::panic::catch_unwind(|| parse_inner(raw)) {
        Ok(Some(p)) => p,
        // The parser found nothing usable, or panicked: keep a row with no headers.
        Ok(None) | Err(_) => ParsedHeaders {
            complete: false,
            category_path: Category::Personal.path_root().to_string(),
            ..ParsedHeaders::default()
        },
    }
}

fn parse_inner(raw: &[u8]) -> Option<ParsedHeaders> {
    let msg = MessageParser::default().parse(raw)?;
    let subject = msg.subject().map(collapse_ws).unwrap_or_default();
    let from = people(msg.from()).into_iter().next().unwrap_or_default();
    let date = msg
        .date()
        .filter(|d| d.is_valid())
        .and_then(|d| DateTime::<Utc>::from_timestamp(d.to_timestamp(), 0));
    let message_id = msg.message_id().and_then(strip_brackets);
    let snippet = msg
        .body_preview(SNIPPET_CHARS * 2)
        .map(|s| truncate_chars(&collapse_ws(&s), SNIPPET_CHARS))
        .unwrap_or_default();
    // Raw values: the path wants the List-Id's `<id>` as written, and mail-parser gives
    // Precedence no typed accessor.
    let list_id_raw = msg.header_raw("List-Id").map(collapse_ws);
    let precedence = msg.header_raw("Precedence").map(collapse_ws);
    let signals = Signals {
        list_id: !msg.list_id().is_empty() || list_id_raw.is_some(),
        list_id_value: list_id_raw.as_deref(),
        precedence: precedence.as_deref(),
        list_unsubscribe: !msg.list_unsubscribe().is_empty(),
        from_address: from.address.as_deref(),
        subject: &subject,
    };
    let category = categorise(&signals);
    let category_path = category_path(category, &signals);
    Some(ParsedHeaders {
        complete: message_id.is_some() && date.is_some(),
        message_id,
        in_reply_to: id_list(msg.in_reply_to()).into_iter().next(),
        references: id_list(msg.references()),
        subject,
        from,
        to: people(msg.to()),
        cc: people(msg.cc()),
        date,
        snippet,
        category,
        category_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_plain_reply() {
        let raw = b"From: \"Anna Weber\" <anna@example.net>\r\nTo: owner@example.org, Bob <bob@example.net>\r\nSubject: Re: Dinner\r\n\ton Saturday?\r\nDate: Sat, 28 Nov 2026 10:15:00 +0100\r\nMessage-ID: <b@example.net>\r\nIn-Reply-To: <a@example.org>\r\nReferences: <root@example.org> <a@example.org>\r\n\r\nYes,   see you\r\nthere!\r\n";
        let p = parse_message(raw);
        assert!(p.complete);
        assert_eq!(p.subject, "Re: Dinner on Saturday?");
        assert_eq!(p.from.name.as_deref(), Some("Anna Weber"));
        assert_eq!(p.from.address.as_deref(), Some("anna@example.net"));
        assert_eq!(p.to.len(), 2);
        assert_eq!(p.message_id.as_deref(), Some("b@example.net"));
        assert_eq!(p.in_reply_to.as_deref(), Some("a@example.org"));
        assert_eq!(p.references, vec!["root@example.org", "a@example.org"]);
        assert_eq!(
            p.date.map(|d| d.to_rfc3339()).as_deref(),
            Some("2026-11-28T09:15:00+00:00")
        );
        assert_eq!(p.snippet, "Yes, see you there!");
        assert_eq!(p.category, Category::Personal);
    }

    #[test]
    fn bidi_controls_cannot_reorder_a_card_line() {
        let raw = "From: \"Paperleaf\u{202E} Books\" <p@example.net>\r\nSubject: Your invoice \u{202E}fdp.exe\u{202C} =?utf-8?q?x=E2=80=AEy?=\r\nDate: Sat, 28 Nov 2026 10:15:00 +0000\r\nMessage-ID: <b@example.net>\r\n\r\nbody\r\n";
        let p = parse_message(raw.as_bytes());
        assert_eq!(p.subject, "Your invoice fdp.exe xy");
        assert_eq!(p.from.name.as_deref(), Some("Paperleaf Books"));
        assert!(!p.subject.chars().any(is_bidi_control));
    }

    #[test]
    fn nul_characters_are_dropped() {
        let raw = b"From: \"An\0na\" <an\0na@example.net>\r\nTo: b\0@example.net\r\nSubject: Din\0ner =?utf-8?q?on=00_Saturday?=\r\nMessage-ID: <b\0@example.net>\r\nIn-Reply-To: <a\0@example.org>\r\nReferences: <r\0@example.org>\r\nDate: Sat, 28 Nov 2026 10:15:00 +0100\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nYes=00 see you\0 there\r\n";
        let p = parse_message(raw);
        let all = format!("{p:?}");
        assert!(!all.contains('\0') && !all.contains("\\0"), "{all}");
        assert_eq!(p.subject, "Dinner on Saturday");
        assert_eq!(p.from.name.as_deref(), Some("Anna"));
        assert_eq!(p.from.address.as_deref(), Some("anna@example.net"));
        assert_eq!(p.message_id.as_deref(), Some("b@example.net"));
        assert_eq!(p.in_reply_to.as_deref(), Some("a@example.org"));
        assert_eq!(p.references, vec!["r@example.org"]);
        assert_eq!(p.snippet, "Yes see you there");
    }

    #[test]
    fn garbage_still_gives_a_row() {
        for raw in [
            &b""[..],
            b"\xff\xfe\x00garbage",
            b"Subject: \xe9t\xe9\r\n\r\nbody",
        ] {
            let p = parse_message(raw);
            assert!(!p.complete);
        }
    }
}
