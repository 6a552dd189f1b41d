//! Addresses: reading them from the arguments (lower-cased, one normal form), finding them in
//! the owner's request as whole addresses, and what the store knows of one (whether the owner's
//! mail has it, and a display name); the accounts a sender is chosen from.

use std::str::FromStr;

use lettre::message::Mailbox;
use lettre::Address;
use serde_json::{Map, Value};

use super::{store_err, NAME};
use crate::backend::AccountInfo;
use crate::parse::Person;
use crate::tools::invalid;
use crate::EmailPlugin;
use iris_core::plugin::ToolError;

/// A list of addresses: an array of strings (a single string is taken as a one-item list).
/// Each may be `addr` or `Name <addr>`; the result is the lower-case address.
pub(super) fn address_list(obj: &Map<String, Value>, key: &str) -> Result<Vec<String>, ToolError> {
    let items: Vec<&Value> = match obj.get(key) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v @ Value::String(_)) => vec![v],
        Some(_) => {
            return Err(invalid(
                NAME,
                format!("`{key}` must be a list of email addresses"),
            ))
        }
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::String(s) = item else {
            return Err(invalid(NAME, format!("`{key}[{i}]` is not a string")));
        };
        let addr = parse_address(s).map_err(|reason| {
            invalid(
                NAME,
                format!(
                    "`{key}[{i}]` `{}` is not an email address: {reason}",
                    s.trim()
                ),
            )
        })?;
        if !out.contains(&addr) {
            out.push(addr);
        }
    }
    Ok(out)
}

/// Parses `addr` or `Name <addr>` with lettre's parser; returns the address, lower-cased (one
/// normal form; every provider IRIS talks to treats addresses case-insensitively).
pub(super) fn parse_address(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err("empty".into());
    }
    let address = match Address::from_str(s) {
        Ok(a) => a,
        Err(_) => Mailbox::from_str(s).map_err(|e| e.to_string())?.email,
    };
    Ok(address.to_string().to_lowercase())
}

/// Whether `address` (lower-case) occurs in `request` as a whole address: case-insensitive, and
/// not as part of a longer one (`nna@example.org` is not in "anna@example.org").
pub(crate) fn in_request(request: &str, address: &str) -> bool {
    let hay = request.to_lowercase();
    let is_addr_char = |c: char| c.is_alphanumeric() || "._%+-@".contains(c);
    let mut from = 0;
    while let Some(pos) = hay[from..].find(address) {
        let start = from + pos;
        let end = start + address.len();
        let before_ok = hay[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_addr_char(c));
        let after = &hay[end..];
        let after_ok = match after.chars().next() {
            None => true,
            // A trailing '.' ends a sentence ("write to anna@example.org."), unless more of an
            // address follows ("anna@example.org.uk").
            Some('.') => !after[1..].chars().next().is_some_and(is_addr_char),
            Some(c) => !is_addr_char(c),
        };
        if before_ok && after_ok {
            return true;
        }
        from = start + 1;
        while !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

/// The people of a stored To or Cc list (JSON); none when it does not parse.
fn person_list(json_text: &str) -> Vec<Person> {
    serde_json::from_str(json_text).unwrap_or_default()
}

/// What the store knows of one address: whether it occurs at all (sender, recipient or cc), and
/// a display name for it when one was seen.
pub(super) async fn known_person(
    plugin: &EmailPlugin,
    address: &str,
) -> Result<(bool, Option<String>), ToolError> {
    let rows = plugin
        .store()
        .people_with_address(address)
        .await
        .map_err(store_err)?;
    let mut known = false;
    let mut name = None;
    for (from_name, from_address, to, cc) in rows {
        let mut people = vec![Person {
            name: from_name,
            address: from_address,
        }];
        people.extend(person_list(&to));
        people.extend(person_list(&cc));
        for p in people {
            if p.address.as_deref().map(str::to_lowercase).as_deref() == Some(address) {
                known = true;
                if name.is_none() {
                    name = p.name.filter(|n| !n.trim().is_empty());
                }
            }
        }
    }
    Ok((known, name))
}

/// The account named by `word` (its name or its address, case-insensitive).
pub(super) fn account_named<'a>(
    accounts: &'a [AccountInfo],
    word: &str,
) -> Option<&'a AccountInfo> {
    let w = word.trim().to_lowercase();
    accounts
        .iter()
        .find(|a| a.name.to_lowercase() == w || a.address.to_lowercase() == w)
}

/// The configured accounts as "name <address>", for a refusal that names them.
pub(super) fn account_list(accounts: &[AccountInfo]) -> String {
    accounts
        .iter()
        .map(|a| format!("{} <{}>", a.name, a.address))
        .collect::<Vec<_>>()
        .join(", ")
}
