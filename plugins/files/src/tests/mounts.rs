//! A mount inside a root: its entries are refused, never copied (renameat2 across file systems
//! fails with EXDEV), on a real tmpfs the test mounts.

use serde_json::json;

use super::{approve, plugin, write};

/// A tmpfs mounted inside the root for the length of a test; unmounted when dropped.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[tokio::test]
async fn an_entry_on_a_mount_inside_the_root_is_refused_never_copied() {
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        // CI runs as root (scripts/test.sh on its machine); elsewhere mounting needs it.
        eprintln!("skipped: mounting a tmpfs inside a root needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("usb");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount -t tmpfs at {}", mnt.display());
    let _mount = Mount(mnt.clone());
    write(dir.path(), "usb/photo.jpg", b"on the stick");
    write(dir.path(), "local.log", b"here");
    let p = plugin(dir.path()).await;
    let (c, out) = approve(
        &p,
        "quarantine_files",
        json!({"paths": ["downloads/usb/photo.jpg", "downloads/local.log"]}),
        "r1",
    )
    .await;
    assert!(
        c["lines"][0]
            .as_str()
            .unwrap()
            .contains("on another file system"),
        "{c}"
    );
    assert_eq!(out["moved"], 1, "{out}");
    assert_eq!(out["items"][0]["status"], "refused", "{out}");
    assert_eq!(
        std::fs::read(mnt.join("photo.jpg")).unwrap(),
        b"on the stick"
    );
    assert!(!dir.path().join("local.log").exists());
    // Nothing was copied into the quarantine for the refused one, and no folder made for it
    // is left behind.
    let batch = out["batch"].as_str().unwrap();
    let quarantined = dir.path().join(".iris-quarantine").join(batch);
    assert!(!quarantined.join("usb").exists());
    assert!(quarantined.join("local.log").exists());
}
