//! The demo mailbox (`iris serve --demo`): a realistic owner's Maildir++ written relative to
//! "now", so "this week's promotions" always means something.
//!
//! 34 RFC 5322 messages for `owner@example.org` (Robin Hale): 5 promotions from the last 7 days
//! and 3 older ones, orders and shipping notices, receipts, newsletters with `List-Id`, and
//! personal threads linked by `In-Reply-To`/`References` (the owner's replies in `.Sent`, one old
//! thread in `.Archive`, the newest mail unread in `new/`). The output depends only on `now`.

use std::fs;
use std::io;
use std::path::Path;

use chrono::{DateTime, Duration, FixedOffset, Offset, Utc};

/// The demo owner's address.
pub const OWNER_ADDRESS: &str = "owner@example.org";

/// The demo owner's name.
pub const OWNER_NAME: &str = "Robin Hale";

const OWNER: (&str, &str) = (OWNER_NAME, OWNER_ADDRESS);

/// One demo message.
struct Demo {
    folder: &'static str,
    /// Minutes before `now`.
    age_min: i64,
    from: (&'static str, &'static str),
    to: &'static [(&'static str, &'static str)],
    cc: &'static [(&'static str, &'static str)],
    subject: &'static str,
    /// Extra header lines, already RFC 5322 formatted.
    headers: &'static [&'static str],
    body: &'static str,
    /// Index of the message this one replies to.
    reply_to: Option<usize>,
    /// Offset of the Date header from UTC, in hours (people write from Europe, shops from UTC).
    tz_hours: i32,
    /// An HTML alternative makes it multipart/alternative.
    html: bool,
}

const D: i64 = 24 * 60;
const H: i64 = 60;

const ANNA: (&str, &str) = ("Anna Weber", "anna.weber@example.net");
const TOM: (&str, &str) = ("Tom Becker", "tom.becker@example.net");
const MARIA: (&str, &str) = ("Maria Santos", "maria.santos@example.com");
const JONAS: (&str, &str) = ("Jonas Hale", "jonas.hale@example.net");
const PRIYA: (&str, &str) = ("Priya Nair", "priya.nair@work.example.com");
const LENA: (&str, &str) = ("Lena Fischer", "lena.fischer@example.net");
const OKAFOR: (&str, &str) = ("David Okafor", "d.okafor@lettings.example.co.uk");

const fn personal(
    folder: &'static str,
    age_min: i64,
    from: (&'static str, &'static str),
    to: &'static [(&'static str, &'static str)],
    subject: &'static str,
    body: &'static str,
    reply_to: Option<usize>,
) -> Demo {
    Demo {
        folder,
        age_min,
        from,
        to,
        cc: &[],
        subject,
        headers: &[],
        body,
        reply_to,
        tz_hours: 1,
        html: false,
    }
}

const fn shop(
    age_min: i64,
    from: (&'static str, &'static str),
    subject: &'static str,
    headers: &'static [&'static str],
    body: &'static str,
) -> Demo {
    Demo {
        folder: "INBOX",
        age_min,
        from,
        to: &[OWNER],
        cc: &[],
        subject,
        headers,
        body,
        reply_to: None,
        tz_hours: 0,
        html: false,
    }
}

/// The mailbox, parents before replies.
const MAILBOX: &[Demo] = &[
    // 0-4: promotions from the last 7 days.
    Demo {
        html: true,
        ..shop(
            5 * H,
            ("Northwind Outfitters", "deals@northwind-outfitters.example"),
            "20% off winter jackets — this weekend only",
            &["List-Unsubscribe: <https://northwind-outfitters.example/unsubscribe?u=rh2291>, <mailto:unsubscribe@northwind-outfitters.example>"],
            "Stay warm for less: 20% off every winter jacket until Sunday midnight.\nUse code WARM20 at checkout.\n",
        )
    },
    shop(
        D + 3 * H,
        ("Lumen Electronics", "offers@lumen-electronics.example"),
        "Early access: our Black Friday prices start now",
        &["List-Unsubscribe: <https://lumen-electronics.example/u/8812>"],
        "As a member you get early access. Headphones from €39, tablets from €149.\n",
    ),
    shop(
        2 * D + 20 * H,
        ("Paperleaf Books", "hello@paperleaf.example"),
        "Flash sale: 3 books for the price of 2 ends tonight",
        &["List-Unsubscribe: <mailto:leave@paperleaf.example>"],
        "Mix and match any three paperbacks and pay for two. Ends at midnight.\n",
    ),
    shop(
        4 * D + 2 * H,
        ("Greenhouse & Co", "promo@greenhouse-co.example"),
        "Last chance: 40% off garden furniture",
        &["List-Unsubscribe: <https://greenhouse-co.example/unsubscribe>"],
        "The end-of-season sale closes on Friday. Benches, tables and loungers at 40% off.\n",
    ),
    // No List-Unsubscribe: a promotion by its marketing sender alone.
    shop(
        5 * D + 18 * H,
        ("Starlight Cinemas", "offers@starlight-cinemas.example"),
        "Weekend treat: 2-for-1 cinema tickets",
        &[],
        "Bring a friend for free this weekend at any Starlight cinema.\n",
    ),
    // 5-7: promotions older than 7 days.
    shop(
        8 * D + 6 * H,
        ("Northwind Outfitters", "deals@northwind-outfitters.example"),
        "Autumn clearance: up to 50% off",
        &["List-Unsubscribe: <https://northwind-outfitters.example/unsubscribe?u=rh2291>"],
        "Final reductions on autumn styles. While stocks last.\n",
    ),
    shop(
        12 * D,
        ("Copper Kettle Café", "news@copperkettle.example"),
        "We miss you — here's 15% off your next visit",
        &["List-Unsubscribe: <mailto:unsubscribe@copperkettle.example>"],
        "It has been a while! Show this email for 15% off any drink.\n",
    ),
    shop(
        21 * D,
        ("Lumen Electronics", "offers@lumen-electronics.example"),
        "New arrivals: smart home starter kits",
        &["List-Unsubscribe: <https://lumen-electronics.example/u/8812>"],
        "Lights, plugs and sensors that work together. Free setup guide included.\n",
    ),
    // 8-10: orders and shipping.
    shop(
        D + 8 * H,
        ("Northwind Outfitters", "orders@northwind-outfitters.example"),
        "Your order NW-48213 has shipped",
        &[],
        "Good news: your order NW-48213 (1 item) is on its way with Parcelway.\nTracking number: PW7731902.\n",
    ),
    shop(
        3 * D + 2 * H,
        ("Parcelway", "tracking@parcelway.example"),
        "Your parcel PW7731902 is out for delivery",
        &[],
        "Your parcel will arrive today between 10:00 and 14:00.\n",
    ),
    shop(
        10 * D,
        ("Paperleaf Books", "orders@paperleaf.example"),
        "Order confirmation: Paperleaf Books PB-99812",
        &[],
        "Thank you for your order PB-99812: 2 books, €24.90. We will email you when it ships.\n",
    ),
    // 11-13: receipts.
    shop(
        2 * D + 4 * H,
        ("Copper Kettle Café", "receipts@copperkettle.example"),
        "Your receipt from Copper Kettle Café",
        &[],
        "Flat white €3.40, almond croissant €2.90. Total €6.30, paid by card ending 4471.\n",
    ),
    shop(
        6 * D,
        ("Hostwise", "billing@hostwise.example"),
        "Invoice INV-2026-0142 from Hostwise",
        &[],
        "Your invoice for web hosting (1 month) is attached. Amount: €7.99. No action needed.\n",
    ),
    shop(
        15 * D,
        ("Brightgrid Energy", "billing@brightgrid.example"),
        "Payment received — thank you",
        &[],
        "We received your payment of €86.20 for account 3300-1822. Thank you.\n",
    ),
    // 14-17: newsletters (List-Id).
    shop(
        9 * H,
        ("The Sunday Long Read", "digest@longread.example"),
        "The Sunday Long Read — issue 142",
        &[
            "List-Id: The Sunday Long Read <sunday.longread.example>",
            "List-Unsubscribe: <https://longread.example/unsubscribe?u=robin>",
            "Precedence: bulk",
        ],
        "This week: the lost rivers under London, a day with a lighthouse keeper, and why we queue.\n",
    ),
    shop(
        3 * D,
        ("Hillside Residents", "news@hillside-residents.example"),
        "Hillside Residents: November meeting minutes",
        &["List-Id: Hillside Neighbourhood Association <news.hillside-residents.example>"],
        "Minutes of the November meeting: street lighting, the winter fair, and the tree survey.\n",
    ),
    shop(
        7 * D + 12 * H,
        ("Riverside Bike Club", "rides@riversidebikes.example"),
        "Ride schedule for the coming weeks",
        &[
            "List-Id: Riverside Bike Club rides <rides.riversidebikes.example>",
            "List-Unsubscribe: <mailto:rides-leave@riversidebikes.example>",
        ],
        "Saturday: 60 km loop to the reservoir, meet 8:30 at the bridge. Sunday: social ride.\n",
    ),
    shop(
        14 * D + 9 * H,
        ("The Sunday Long Read", "digest@longread.example"),
        "The Sunday Long Read — issue 141",
        &[
            "List-Id: The Sunday Long Read <sunday.longread.example>",
            "List-Unsubscribe: <https://longread.example/unsubscribe?u=robin>",
            "Precedence: bulk",
        ],
        "This week: a year of bread, the last typewriter repair shop, and night trains.\n",
    ),
    // 18-20: thread "Dinner on Saturday?".
    personal(
        "INBOX",
        2 * D + 10 * H,
        ANNA,
        &[OWNER],
        "Dinner on Saturday?",
        "Hi Robin,\n\nAre you free for dinner on Saturday? We could try the new Lebanese place.\n\nAnna\n",
        None,
    ),
    personal(
        "Sent",
        2 * D + 8 * H,
        OWNER,
        &[ANNA],
        "Re: Dinner on Saturday?",
        "Sounds great! 7:30?\n\nRobin\n",
        Some(18),
    ),
    personal(
        "INBOX",
        2 * D + 5 * H,
        ANNA,
        &[OWNER],
        "Re: Dinner on Saturday?",
        "7:30 works. I'll book a table for two.\n",
        Some(19),
    ),
    // 21-23: thread "Photos from the hike".
    Demo {
        cc: &[ANNA],
        ..personal(
            "INBOX",
            4 * D,
            TOM,
            &[OWNER],
            "Photos from the hike",
            "Here are the photos from Sunday. The one at the summit came out really well.\n\nTom\n",
            None,
        )
    },
    Demo {
        cc: &[ANNA],
        ..personal(
            "Sent",
            3 * D + 20 * H,
            OWNER,
            &[TOM],
            "Re: Photos from the hike",
            "Lovely, thanks Tom! Can I print the summit one?\n",
            Some(21),
        )
    },
    personal(
        "INBOX",
        3 * D + 12 * H,
        TOM,
        &[OWNER],
        "Re: Photos from the hike",
        "Of course, go ahead. I can send the full-resolution file.\n",
        Some(22),
    ),
    // 24-25: thread "Flat keys while you're away".
    personal(
        "INBOX",
        D,
        MARIA,
        &[OWNER],
        "Flat keys while you're away",
        "Hi Robin, shall I pick up your keys on Thursday to water the plants?\n\nMaria\n",
        None,
    ),
    personal(
        "Sent",
        22 * H,
        OWNER,
        &[MARIA],
        "Re: Flat keys while you're away",
        "Thursday is perfect, thank you so much!\n",
        Some(24),
    ),
    // 26-28: thread "Plumber visit on Tuesday".
    personal(
        "INBOX",
        6 * D,
        OKAFOR,
        &[OWNER],
        "Plumber visit on Tuesday",
        "Dear Robin,\n\nThe plumber will come on Tuesday morning to look at the boiler.\n\nKind regards,\nDavid Okafor\n",
        None,
    ),
    personal(
        "Sent",
        6 * D - 2 * H,
        OWNER,
        &[OKAFOR],
        "Re: Plumber visit on Tuesday",
        "Thanks, I will be home from 9.\n",
        Some(26),
    ),
    personal(
        "INBOX",
        5 * D + 20 * H,
        OKAFOR,
        &[OWNER],
        "Re: Plumber visit on Tuesday",
        "Noted, he will ring when he is on his way.\n",
        Some(27),
    ),
    // 29-33: single messages.
    personal(
        "INBOX",
        3 * H,
        JONAS,
        &[OWNER],
        "Mum's birthday present",
        "Shall we go halves on the garden bench Mum wanted? I can pick it up.\n\nJonas\n",
        None,
    ),
    Demo {
        cc: &[("Sam Ortiz", "sam.ortiz@work.example.com")],
        ..personal(
            "INBOX",
            5 * D,
            PRIYA,
            &[OWNER],
            "Draft of the quarterly report",
            "Hi Robin, the draft is in the shared folder. Comments by Friday would be great.\n\nPriya\n",
            None,
        )
    },
    personal(
        "INBOX",
        9 * D,
        LENA,
        &[OWNER],
        "Book club: next pick",
        "We are voting between two novels for January. Which one do you prefer?\n",
        None,
    ),
    personal(
        "INBOX",
        14 * D,
        JONAS,
        &[OWNER],
        "Quick favour",
        "Could you lend me your ladder this weekend?\n",
        None,
    ),
    personal(
        "Archive",
        40 * D,
        ANNA,
        &[OWNER],
        "Old photos from the lake trip",
        "Found these in an old folder, thought you'd like them.\n",
        None,
    ),
];

/// RFC 2047 "Q" encoding of a header phrase, only when it is not plain ASCII.
fn encode_word(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    let mut out = String::from("=?UTF-8?Q?");
    for b in s.bytes() {
        match b {
            b' ' => out.push('_'),
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'!' | b'*' | b'+' | b'-' | b'/' => {
                out.push(char::from(b))
            }
            _ => out.push_str(&format!("={b:02X}")),
        }
    }
    out.push_str("?=");
    out
}

fn mailbox((name, addr): (&str, &str)) -> String {
    if name.is_ascii() {
        format!("\"{name}\" <{addr}>")
    } else {
        format!("{} <{addr}>", encode_word(name))
    }
}

fn mailboxes(list: &[(&str, &str)]) -> String {
    list.iter()
        .map(|m| mailbox(*m))
        .collect::<Vec<_>>()
        .join(", ")
}

fn domain(addr: &str) -> &str {
    addr.rsplit_once('@').map_or("example.org", |(_, d)| d)
}

fn slug(subject: &str) -> String {
    let s: String = subject
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    s.split('-')
        .filter(|p| !p.is_empty())
        .take(4)
        .collect::<Vec<_>>()
        .join("-")
}

/// Renders message `i` given the ids of the messages before it.
fn render(i: usize, m: &Demo, date: DateTime<Utc>, ids: &[String], refs: &[Vec<String>]) -> String {
    let offset = FixedOffset::east_opt(m.tz_hours * 3600).unwrap_or_else(|| Utc.fix());
    let mut h = vec![
        format!("Date: {}", date.with_timezone(&offset).to_rfc2822()),
        format!("From: {}", mailbox(m.from)),
        format!("To: {}", mailboxes(m.to)),
    ];
    if !m.cc.is_empty() {
        h.push(format!("Cc: {}", mailboxes(m.cc)));
    }
    h.push(format!("Subject: {}", encode_word(m.subject)));
    h.push(format!("Message-ID: <{}>", ids[i]));
    if let Some(p) = m.reply_to {
        h.push(format!("In-Reply-To: <{}>", ids[p]));
        let chain: Vec<String> = refs[i].iter().map(|r| format!("<{r}>")).collect();
        h.push(format!("References: {}", chain.join(" ")));
    }
    h.extend(m.headers.iter().map(|s| s.to_string()));
    h.push("MIME-Version: 1.0".into());
    let body = m.body.replace('\n', "\r\n");
    let text = if m.html {
        let boundary = format!("=_iris_demo_{i}");
        let html_body = format!(
            "<html><body><p>{}</p></body></html>",
            m.body.trim().replace('\n', "<br>")
        );
        h.push(format!(
            "Content-Type: multipart/alternative; boundary=\"{boundary}\""
        ));
        format!(
            "This is a multi-part message in MIME format.\r\n\r\n--{boundary}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{body}\r\n--{boundary}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{html_body}\r\n--{boundary}--\r\n"
        )
    } else {
        h.push("Content-Type: text/plain; charset=utf-8".into());
        h.push("Content-Transfer-Encoding: 8bit".into());
        body
    };
    format!("{}\r\n\r\n{text}", h.join("\r\n"))
}

/// Whether any folder of the Maildir at `dir` holds a message.
fn has_messages(dir: &Path) -> io::Result<bool> {
    let mut folders = vec![dir.to_path_buf()];
    match fs::read_dir(dir) {
        Ok(entries) => {
            for e in entries {
                let e = e?;
                if e.file_name().to_string_lossy().starts_with('.') && e.path().is_dir() {
                    folders.push(e.path());
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    }
    for f in folders {
        for sub in ["cur", "new"] {
            match fs::read_dir(f.join(sub)) {
                Ok(mut entries) => {
                    if entries.next().is_some() {
                        return Ok(true);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(false)
}

/// Writes the demo mailbox into the Maildir++ at `dir` (created when missing) and returns how
/// many messages it wrote: 0 when any folder already holds a message (idempotent; an owner's
/// real mail is never mixed with demo mail). Each message is delivered the Maildir way: written
/// to `tmp/`, then renamed into `cur/` (read) or `new/` (the newest, unread).
///
/// # Errors
/// The I/O error of the first file or folder that could not be written.
pub fn write_demo_maildir(dir: &Path, now: DateTime<Utc>) -> io::Result<usize> {
    if has_messages(dir)? {
        return Ok(0);
    }
    let folders = ["INBOX", "Sent", "Archive"];
    for f in folders {
        let fdir = folder_dir(dir, f);
        for sub in ["cur", "new", "tmp"] {
            fs::create_dir_all(fdir.join(sub))?;
        }
        if f != "INBOX" {
            fs::write(fdir.join("maildirfolder"), b"")?;
        }
    }
    let dates: Vec<DateTime<Utc>> = MAILBOX
        .iter()
        .map(|m| now - Duration::minutes(m.age_min))
        .collect();
    let ids: Vec<String> = MAILBOX
        .iter()
        .zip(&dates)
        .map(|(m, d)| format!("{}.{}@{}", slug(m.subject), d.timestamp(), domain(m.from.1)))
        .collect();
    let mut refs: Vec<Vec<String>> = Vec::with_capacity(MAILBOX.len());
    for m in MAILBOX {
        let chain = match m.reply_to {
            Some(p) => {
                let mut c = refs.get(p).cloned().unwrap_or_default();
                c.push(ids[p].clone());
                c
            }
            None => Vec::new(),
        };
        refs.push(chain);
    }
    for (i, m) in MAILBOX.iter().enumerate() {
        let text = render(i, m, dates[i], &ids, &refs);
        let fdir = folder_dir(dir, m.folder);
        let base = format!("{}.M{i}P1.iris-demo", dates[i].timestamp());
        let tmp = fdir.join("tmp").join(&base);
        fs::write(&tmp, text.as_bytes())?;
        // Mail younger than 12 hours in INBOX is unread (new/); everything else has been seen.
        let dest = if m.folder == "INBOX" && m.age_min < 12 * H {
            fdir.join("new").join(&base)
        } else {
            fdir.join("cur").join(format!("{base}:2,S"))
        };
        fs::rename(&tmp, &dest)?;
    }
    Ok(MAILBOX.len())
}

fn folder_dir(dir: &Path, folder: &str) -> std::path::PathBuf {
    if folder == "INBOX" {
        dir.to_path_buf()
    } else {
        dir.join(format!(".{folder}"))
    }
}

/// Subjects of the demo promotions dated within 7 days of `now`, newest first (for tests and
/// the demo model's script): the first five entries of the mailbox.
pub fn promotions_this_week() -> Vec<&'static str> {
    MAILBOX.iter().take(5).map(|m| m.subject).collect()
}
