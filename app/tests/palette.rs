//! The style sheet's palette (the dark scheme): `style/iris.css` keeps every colour in
//! custom properties on `:root`, once for the light scheme and once inside
//! `@media (prefers-color-scheme: dark)`. These tests read the file itself and check that
//!
//! - no rule hard-codes a colour (so a new tone cannot be light-only),
//! - both schemes define the same colour names,
//! - every text-on-background pair the rules use reads at WCAG AA (contrast 4.5:1 or more) in
//!   both schemes: the pairs a rule sets together (`color` with `background`) are found in the
//!   file, the inherited ones (text in a panel) are listed below with where they occur.

use std::collections::{BTreeMap, BTreeSet};

/// WCAG 2.x AA for normal-size text.
const AA_TEXT: f64 = 4.5;

/// Text on a background that comes from inheritance, not from one rule: (text, background,
/// where). Each name is a custom property without its `--`.
const INHERITED_PAIRS: &[(&str, &str, &str)] = &[
    ("ink", "bg", "body text on the page"),
    ("ink", "surface", "card, chat and dialog text"),
    ("ink-soft", "bg", "section titles, the Plugins intro"),
    (
        "ink-soft",
        "surface",
        "\"You asked\", dialog lines, page links",
    ),
    ("ink-faint", "bg", "the viewer line, empty lists"),
    (
        "ink-faint",
        "surface",
        "card times, labels, the chat's names",
    ),
    ("ink-faint", "sunken", "the call hash in the exact call"),
    (
        "ink-faint",
        "table-head",
        "the Plugins table's column names",
    ),
    (
        "ink-faint",
        "accent-soft",
        "\"You\" on the owner's chat line",
    ),
    (
        "ink-faint",
        "warn-soft",
        "labels in a not-done outcome, IRIS on a halt line",
    ),
    ("ink-faint", "ok-soft", "labels in an approved outcome"),
    ("ink-faint", "danger-soft", "labels in a failed outcome"),
    (
        "ink-faint",
        "neutral-soft",
        "labels in a rejected or expired outcome",
    ),
    (
        "ink",
        "sunken",
        "a rejected or expired outcome, the model's chat lines",
    ),
    ("ink-soft", "sunken", "the outcome's Result toggle"),
    (
        "ink-soft",
        "ok-soft",
        "the Result toggle in an approved outcome",
    ),
    (
        "ink-soft",
        "warn-soft",
        "the Result toggle in a not-done outcome",
    ),
    (
        "ink-soft",
        "danger-soft",
        "the Result toggle in a failed outcome",
    ),
    ("ink", "ok-soft", "an approved outcome"),
    ("ink", "accent-soft", "the owner's chat lines"),
    ("ink", "warn-soft", "a halt line in the chat"),
    ("ink", "danger-soft", "the new-card banner"),
    (
        "danger-strong",
        "surface",
        "a destructive card's title, the dialog's warning",
    ),
    (
        "danger-strong",
        "danger-soft",
        "a pending destructive card's title over its red tint",
    ),
    ("accent", "surface", "links, the exact-call toggle"),
    ("accent", "bg", "links on the page"),
    ("accent", "sunken", "links inside a quiet panel"),
    (
        "ok",
        "surface",
        "the undo sentence on a card and in the dialog",
    ),
    (
        "accent-ink",
        "accent-hover",
        "the primary button under the pointer",
    ),
    (
        "danger-ink",
        "danger-hover",
        "the destructive button under the pointer",
    ),
    (
        "ink",
        "hover",
        "the quiet button and a page link under the pointer",
    ),
];

/// A colour as sRGB channels 0-255 and alpha 0-1.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Colour {
    rgb: [f64; 3],
    alpha: f64,
}

impl Colour {
    /// `#rgb`, `#rrggbb`, `rgb(r, g, b)` or `rgba(r, g, b, a)`; `None` for anything else.
    fn parse(value: &str) -> Option<Colour> {
        let value = value.trim();
        if let Some(hex) = value.strip_prefix('#') {
            let hex: String = match hex.len() {
                3 => hex.chars().flat_map(|c| [c, c]).collect(),
                6 => hex.to_owned(),
                _ => return None,
            };
            let channel = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok().map(f64::from);
            return Some(Colour {
                rgb: [channel(0)?, channel(2)?, channel(4)?],
                alpha: 1.0,
            });
        }
        let inner = value
            .strip_prefix("rgba(")
            .or_else(|| value.strip_prefix("rgb("))?
            .strip_suffix(')')?;
        let parts: Vec<f64> = inner
            .split(',')
            .map(|p| p.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .ok()?;
        match parts.as_slice() {
            [r, g, b] => Some(Colour {
                rgb: [*r, *g, *b],
                alpha: 1.0,
            }),
            [r, g, b, a] => Some(Colour {
                rgb: [*r, *g, *b],
                alpha: *a,
            }),
            _ => None,
        }
    }

    /// WCAG 2.x relative luminance.
    fn luminance(&self) -> f64 {
        let linear = |c: f64| {
            let c = c / 255.0;
            if c <= 0.039_28 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * linear(self.rgb[0]) + 0.7152 * linear(self.rgb[1]) + 0.0722 * linear(self.rgb[2])
    }
}

/// WCAG 2.x contrast ratio, 1 to 21.
fn contrast(a: Colour, b: Colour) -> f64 {
    let (la, lb) = (a.luminance(), b.luminance());
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// The style sheet without its comments.
fn style_sheet() -> String {
    // Found when the test runs, from the package's folder (cargo runs tests there): a path
    // compiled in would name the clone that built it (scripts/lib/commit_mtimes.py).
    let app = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::current_dir().expect("the working folder"));
    let path = app.join("../style/iris.css");
    let text = std::fs::read_to_string(path).expect("style/iris.css is readable");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("every comment is closed");
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

/// The byte range of the `{ ... }` block whose `{` is the first one at or after `from`.
fn block_at(css: &str, from: usize) -> std::ops::Range<usize> {
    let open = from + css[from..].find('{').expect("a block follows");
    let mut depth = 0usize;
    for (i, c) in css[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + 1..open + i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced braces after byte {from}");
}

/// The `property: value` declarations of one block's body (no nested blocks).
fn declarations(body: &str) -> Vec<(String, String)> {
    body.split(';')
        .filter_map(|d| d.split_once(':'))
        .map(|(p, v)| (p.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The light palette, the dark palette, and the rest of the sheet (the rules).
struct Sheet {
    light: BTreeMap<String, Colour>,
    dark: BTreeMap<String, Colour>,
    rules: String,
}

/// The colour custom properties (name without `--`) of a `:root` body.
fn palette(body: &str) -> BTreeMap<String, Colour> {
    declarations(body)
        .into_iter()
        .filter_map(|(p, v)| Some((p.strip_prefix("--")?.to_owned(), Colour::parse(&v)?)))
        .collect()
}

fn sheet() -> Sheet {
    let css = style_sheet();
    let light_at = css.find(":root").expect("a light :root block");
    let light = block_at(&css, light_at);
    let media_at = css
        .find("@media (prefers-color-scheme: dark)")
        .expect("a dark scheme block");
    let media = block_at(&css, media_at);
    let dark_root = media.start
        + css[media.clone()]
            .find(":root")
            .expect(":root in the dark block");
    let dark = block_at(&css, dark_root);
    let rules = format!(
        "{}{}{}",
        &css[..light_at],
        &css[light.end + 1..media_at],
        &css[media.end + 1..]
    );
    Sheet {
        light: palette(&css[light.clone()]),
        dark: palette(&css[dark]),
        rules,
    }
}

/// The first `var(--NAME)` in a value.
fn first_var(value: &str) -> Option<String> {
    let start = value.find("var(--")? + "var(--".len();
    let end = start + value[start..].find([')', ','])?;
    Some(value[start..end].trim().to_owned())
}

/// Every (text, background, selector) a single rule sets together.
fn rule_pairs(rules: &str) -> Vec<(String, String, String)> {
    let mut pairs = Vec::new();
    let mut from = 0;
    while let Some(open) = rules[from..].find('{').map(|i| from + i) {
        let body = block_at(rules, open);
        let inner = &rules[body.clone()];
        if inner.contains('{') {
            // An at-rule: look inside it.
            from = open + 1;
            continue;
        }
        let selector = rules[..open]
            .rsplit(['}', '{'])
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let decls = declarations(inner);
        let text = decls
            .iter()
            .find(|(p, _)| p == "color")
            .and_then(|(_, v)| first_var(v));
        let ground = decls
            .iter()
            .find(|(p, _)| p == "background" || p == "background-color")
            .and_then(|(_, v)| first_var(v));
        if let (Some(text), Some(ground)) = (text, ground) {
            pairs.push((text, ground, selector));
        }
        from = body.end + 1;
    }
    pairs
}

#[test]
fn no_rule_hard_codes_a_colour() {
    let rules = sheet().rules;
    let mut found = Vec::new();
    for (i, _) in rules.match_indices('#') {
        let hex: String = rules[i + 1..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect();
        if hex.len() >= 3 {
            found.push(format!("#{hex}"));
        }
    }
    for function in ["rgb(", "rgba(", "hsl(", "hsla("] {
        if rules.contains(function) {
            found.push(function.to_owned());
        }
    }
    assert!(
        found.is_empty(),
        "colours outside the palette (use a custom property so both schemes have it): {found:?}"
    );
}

#[test]
fn both_schemes_define_the_same_colours() {
    let sheet = sheet();
    assert!(
        sheet.light.len() >= 20,
        "the palette was not found: {:?}",
        sheet.light
    );
    let light: BTreeSet<_> = sheet.light.keys().collect();
    let dark: BTreeSet<_> = sheet.dark.keys().collect();
    let only_light: Vec<_> = light.difference(&dark).collect();
    let only_dark: Vec<_> = dark.difference(&light).collect();
    assert!(
        only_light.is_empty() && only_dark.is_empty(),
        "light only: {only_light:?}; dark only: {only_dark:?}"
    );
    // The dark scheme really is dark: its page is darker than its text.
    let luminance = |scheme: &BTreeMap<String, Colour>, name: &str| scheme[name].luminance();
    assert!(luminance(&sheet.dark, "bg") < luminance(&sheet.dark, "ink"));
    assert!(luminance(&sheet.light, "bg") > luminance(&sheet.light, "ink"));
}

#[test]
fn every_text_pair_reads_at_wcag_aa_in_both_schemes() {
    let sheet = sheet();
    let mut pairs: Vec<(String, String, String)> = INHERITED_PAIRS
        .iter()
        .map(|(t, b, w)| ((*t).to_owned(), (*b).to_owned(), (*w).to_owned()))
        .collect();
    let from_rules = rule_pairs(&sheet.rules);
    // The rules that set both (badges, buttons, outcomes, errors) must have been found.
    assert!(
        from_rules
            .iter()
            .any(|(_, _, s)| s.contains(".badge-danger"))
            && from_rules
                .iter()
                .any(|(_, _, s)| s.contains(".outcome-tone-warning")),
        "rule pairs not found: {from_rules:?}"
    );
    pairs.extend(from_rules);

    let mut failures = Vec::new();
    for (scheme, colours) in [("light", &sheet.light), ("dark", &sheet.dark)] {
        for (text, ground, place) in &pairs {
            let (Some(t), Some(g)) = (colours.get(text), colours.get(ground)) else {
                failures.push(format!(
                    "{scheme}: --{text} on --{ground} ({place}): not defined"
                ));
                continue;
            };
            assert!(
                (t.alpha - 1.0).abs() < f64::EPSILON && (g.alpha - 1.0).abs() < f64::EPSILON,
                "--{text} on --{ground} ({place}): text pairs use opaque colours"
            );
            let ratio = contrast(*t, *g);
            if ratio < AA_TEXT {
                failures.push(format!(
                    "{scheme}: --{text} on --{ground} ({place}): {ratio:.2}:1"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "below 4.5:1:\n{}", failures.join("\n"));
}

#[test]
fn contrast_matches_known_values() {
    let black = Colour::parse("#000").unwrap();
    let white = Colour::parse("#ffffff").unwrap();
    assert!((contrast(black, white) - 21.0).abs() < 1e-9);
    assert!((contrast(white, white) - 1.0).abs() < 1e-9);
    // #767676 on white is the classic just-AA grey (4.54:1).
    let grey = Colour::parse("rgb(118, 118, 118)").unwrap();
    assert!((contrast(grey, white) - 4.54).abs() < 0.01);
}
