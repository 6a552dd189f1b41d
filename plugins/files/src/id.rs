//! The entry id rule: every path argument and every `list_files` id is `ROOT/relative/path`,
//! the root's configured name, one `/`, then the path relative to the root with the bytes that
//! are not UTF-8 (and `%` itself) percent-encoded, so any name a Linux file system holds has
//! exactly one id and every id names exactly one path.
//!
//! Parsing refuses before anything is opened: an empty path, an absolute one, `.` and `..`
//! components, empty components (`a//b`), a NUL byte, a component over 255 bytes, and a bad
//! `%` escape. That a parsed path stays beneath its root is the kernel's to enforce when it is
//! opened (`crate::root`, `RESOLVE_BENEATH`): a symlinked folder may still lead out.

use std::fmt;

/// The name of the IRIS-owned folder in each root (ADR-0067): hidden from `list_files`, never
/// named by `quarantine_files`.
pub const QUARANTINE_DIR: &str = ".iris-quarantine";

/// Longest name of one path component, in bytes (Linux's `NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// A parsed entry id: a root name and a relative path of raw bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId {
    root: String,
    rel: Vec<u8>,
}

/// Why a text is not an entry id; the message names the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IdError(pub String);

impl EntryId {
    /// Parses `ROOT/relative/path` (see the module docs).
    ///
    /// # Errors
    /// [`IdError`] naming the rule the text breaks.
    pub fn parse(text: &str) -> Result<Self, IdError> {
        let bad = |why: &str| IdError(format!("`{}`: {why}", shown(text)));
        let Some((root, rest)) = text.split_once('/') else {
            return Err(bad(
                "not a path id: write ROOT/relative/path, as list_files returns it",
            ));
        };
        if root.is_empty() || root.trim() != root {
            return Err(bad("it names no root before the first `/`"));
        }
        if rest.is_empty() {
            return Err(bad("it names the root itself; name an entry inside it"));
        }
        let rel = decode(rest).map_err(|why| bad(&why))?;
        Self::new(root, rel).map_err(|e| bad(&e.0))
    }

    /// An id from a root name and raw relative path bytes.
    ///
    /// # Errors
    /// [`IdError`] when `rel` breaks a rule of the module docs.
    pub fn new(root: &str, rel: Vec<u8>) -> Result<Self, IdError> {
        if rel.is_empty() {
            return Err(IdError("the path is empty".into()));
        }
        if rel.starts_with(b"/") {
            return Err(IdError(
                "the path is absolute; paths are relative to their root".into(),
            ));
        }
        if rel.contains(&0) {
            return Err(IdError("the path holds a NUL byte".into()));
        }
        for part in rel.split(|b| *b == b'/') {
            match part {
                b"" => {
                    return Err(IdError(
                        "the path has an empty component (`//` or a trailing `/`)".into(),
                    ))
                }
                b"." | b".." => return Err(IdError(
                    "the path has a `.` or `..` component; nothing outside a root is ever touched"
                        .into(),
                )),
                p if p.len() > NAME_MAX => {
                    return Err(IdError(format!(
                        "a component is {} bytes long; a name holds at most {NAME_MAX}",
                        p.len()
                    )))
                }
                _ => {}
            }
        }
        Ok(EntryId {
            root: root.to_string(),
            rel,
        })
    }

    /// The root's name.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// The path relative to the root, raw bytes.
    pub fn rel(&self) -> &[u8] {
        &self.rel
    }

    /// The relative path as its id text (percent-encoded where not UTF-8).
    pub fn rel_text(&self) -> String {
        encode(&self.rel)
    }

    /// The parent folder's relative path (empty for an entry directly in the root) and the
    /// entry's own name.
    pub fn split(&self) -> (&[u8], &[u8]) {
        match self.rel.iter().rposition(|b| *b == b'/') {
            Some(i) => (&self.rel[..i], &self.rel[i + 1..]),
            None => (&[], &self.rel),
        }
    }

    /// Whether the path is inside the root's quarantine folder.
    pub fn in_quarantine(&self) -> bool {
        self.rel.split(|b| *b == b'/').next() == Some(QUARANTINE_DIR.as_bytes())
    }

    /// A child of this entry.
    ///
    /// # Errors
    /// [`IdError`] when `name` is not one component.
    pub fn join(&self, name: &[u8]) -> Result<Self, IdError> {
        let mut rel = self.rel.clone();
        rel.push(b'/');
        rel.extend_from_slice(name);
        Self::new(&self.root, rel)
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.root, encode(&self.rel))
    }
}

/// Percent-encodes `%` and every byte that is not part of valid UTF-8.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '%' {
                out.push_str("%25");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The inverse of [`encode`]: `%XX` (two hex digits) is that byte; a `%` otherwise is refused.
///
/// # Errors
/// A message naming the bad escape.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => {
                    return Err(
                        "a `%` not followed by two hex digits (a `%` in a name is written %25)"
                            .into(),
                    )
                }
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// `text` for an error message: escaped and bounded like card text.
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(120).collect();
    iris_core::mcp::escaped(&cut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_has_one_id_and_back() {
        let names: Vec<Vec<u8>> = vec![
            b"logs/app.log".to_vec(),
            b"100%/done".to_vec(),
            b"caf\xc3\xa9/line\nbreak".to_vec(),
            b"bad\xff\xfe/name".to_vec(),
            "evil\u{202e}gnp.exe".as_bytes().to_vec(),
            vec![b'a'; 255],
        ];
        for rel in names {
            let id = EntryId::new("downloads", rel.clone()).unwrap();
            let text = id.to_string();
            assert_eq!(EntryId::parse(&text).unwrap(), id, "{text}");
            assert_eq!(EntryId::parse(&text).unwrap().rel(), rel.as_slice());
        }
        assert_eq!(
            EntryId::new("d", b"bad\xff".to_vec()).unwrap().to_string(),
            "d/bad%FF"
        );
        assert_eq!(
            EntryId::new("d", b"100%".to_vec()).unwrap().to_string(),
            "d/100%25"
        );
    }

    #[test]
    fn paths_that_leave_or_confuse_are_refused() {
        for bad in [
            "downloads",
            "/etc/passwd",
            "downloads/",
            "downloads//etc",
            "downloads/../etc",
            "downloads/a/../../etc",
            "downloads/./a",
            "downloads/a/",
            "downloads/%zz",
            "downloads/a%2",
            "downloads/a%00b",
            " downloads/a",
        ] {
            assert!(EntryId::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let long = format!("d/{}", "a".repeat(256));
        assert!(EntryId::parse(&long).unwrap_err().0.contains("255"));
        // `%2F` decodes to a `/`, which is then a separator like any other: still no `..`.
        assert!(EntryId::parse("d/a%2F..%2Fb").is_err());
    }

    #[test]
    fn parent_name_and_quarantine() {
        let id = EntryId::parse("d/a/b/c.txt").unwrap();
        assert_eq!(id.split(), (&b"a/b"[..], &b"c.txt"[..]));
        let top = EntryId::parse("d/c.txt").unwrap();
        assert_eq!(top.split(), (&b""[..], &b"c.txt"[..]));
        assert!(EntryId::parse("d/.iris-quarantine/x")
            .unwrap()
            .in_quarantine());
        assert!(!EntryId::parse("d/x/.iris-quarantine")
            .unwrap()
            .in_quarantine());
    }
}
