//! The demo folder (`iris serve --demo`): a "downloads" root with old logs in `logs/` (modified
//! 40 to 90 days before the demo starts), this week's log, an installer, a photo and a
//! `reports/` folder, so "clean up the old logs in downloads" finds three old logs and makes one
//! card, and this week's log stays.

use std::io;
use std::path::Path;
use std::time::{Duration as StdDuration, SystemTime};

use chrono::{DateTime, Utc};

/// Writes the demo folder into `dir` (created when missing) and returns how many files it
/// wrote: 0 when `dir` already holds anything (idempotent; an owner's real folder is never mixed
/// with demo files).
///
/// # Errors
/// The I/O error of the first file or folder that could not be written.
pub fn write_demo_folder(dir: &Path, now: DateTime<Utc>) -> io::Result<usize> {
    if dir.exists() && std::fs::read_dir(dir)?.next().is_some() {
        return Ok(0);
    }
    let days_ago = |d: u64| {
        let now = SystemTime::UNIX_EPOCH
            + StdDuration::from_secs(u64::try_from(now.timestamp()).unwrap_or(0));
        now - StdDuration::from_secs(d * 86_400)
    };
    let log = |month: &str, lines: usize| {
        (0..lines)
            .map(|i| {
                format!(
                    "2026-{month}-01T10:{:02}:00Z INFO sync: {i} messages checked\n",
                    i % 60
                )
            })
            .collect::<String>()
    };
    let files: Vec<(&str, Vec<u8>, u64)> = vec![
        ("logs/sync-2026-08.log", log("08", 900).into_bytes(), 90),
        ("logs/sync-2026-09.log", log("09", 700).into_bytes(), 62),
        ("logs/installer-error.log", log("10", 120).into_bytes(), 41),
        ("logs/sync-this-week.log", log("12", 40).into_bytes(), 1),
        ("setup-tool-2.4.1.deb", vec![0x21; 48_000], 20),
        ("holiday-photo.jpg", vec![0xff; 230_000], 12),
        ("reports/q3-summary.pdf", b"%PDF-1.4 demo\n".repeat(900), 30),
        ("reports/notes.txt", b"Quarterly notes.\n".repeat(20), 30),
    ];
    for (rel, bytes, age) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, bytes)?;
        std::fs::File::options()
            .write(true)
            .open(&path)?
            .set_modified(days_ago(*age))?;
    }
    Ok(files.len())
}
