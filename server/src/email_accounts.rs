//! Maps one `[[email.accounts]]` setting (DESIGN §7) to the email plugin's account: kind
//! `maildir` (with `path`) or `imap` (with `host`, `port`, `user`, `password_env`). The order of
//! accounts, used to choose a sender, is the file's (after `IRIS_MAILDIR`, see `state.rs`).

use iris_email::{AccountConfig, AccountKind};

use crate::config::AccountSetting;

/// The IMAP port when an `imap` account names none: implicit TLS (RFC 8314).
pub const DEFAULT_IMAP_PORT: u16 = 993;

fn required<'a>(
    a: &'a AccountSetting,
    field: &str,
    value: &'a Option<String>,
) -> anyhow::Result<&'a str> {
    match crate::config::non_blank(value) {
        Some(v) => Ok(v),
        None => anyhow::bail!(
            "email account `{}`: kind imap needs `{field}` (DESIGN §7: host, port, user, \
             password_env)",
            a.name
        ),
    }
}

/// One `[[email.accounts]]` entry as the plugin's account.
///
/// # Errors
/// A `maildir` without `path`; an `imap` without `host`, `user` or `password_env` (named); any
/// other kind. (Whether an IMAP account may connect in plain text, and whether its password
/// variable is set, is the plugin's check when it opens the account.)
pub fn account(a: &AccountSetting) -> anyhow::Result<AccountConfig> {
    match a.kind.as_str() {
        "maildir" => match &a.path {
            Some(path) => Ok(AccountConfig {
                name: a.name.clone(),
                address: a.address.clone(),
                kind: AccountKind::Maildir { path: path.clone() },
            }),
            None => anyhow::bail!(
                "email account `{}`: kind maildir needs `path` (DESIGN §7)",
                a.name
            ),
        },
        "imap" => Ok(AccountConfig {
            name: a.name.clone(),
            address: a.address.clone(),
            kind: AccountKind::Imap {
                host: required(a, "host", &a.host)?.to_string(),
                port: a.port.unwrap_or(DEFAULT_IMAP_PORT),
                user: required(a, "user", &a.user)?.to_string(),
                password_env: required(a, "password_env", &a.password_env)?.to_string(),
            },
        }),
        other => anyhow::bail!(
            "email account `{}`: kind `{other}` is not supported (use `maildir` or `imap`)",
            a.name
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    #[test]
    #[allow(clippy::result_large_err)]
    fn maildir_and_imap_accounts_in_file_order() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "iris.toml",
                r#"
[[email.accounts]]
name = "work"
address = "me@work.example"
kind = "imap"
host = "imap.work.example"
user = "me@work.example"
password_env = "IRIS_WORK_PASSWORD"

[[email.accounts]]
name = "home"
address = "me@home.example"
kind = "maildir"
path = "/home/me/Maildir"

[[email.accounts]]
name = "test"
address = "owner@example.org"
kind = "imap"
host = "127.0.0.1"
port = 10143
user = "owner"
password_env = "IRIS_TEST_PASSWORD"
"#,
            )?;
            let s = Settings::load().map_err(|e| *e)?;
            let got: Vec<AccountConfig> = s
                .email
                .accounts
                .iter()
                .map(account)
                .collect::<anyhow::Result<_>>()
                .map_err(|e| e.to_string())?;
            let names: Vec<&str> = got.iter().map(|a| a.name.as_str()).collect();
            assert_eq!(names, ["work", "home", "test"], "file order");
            assert_eq!(
                got[0].kind,
                AccountKind::Imap {
                    host: "imap.work.example".into(),
                    port: 993,
                    user: "me@work.example".into(),
                    password_env: "IRIS_WORK_PASSWORD".into(),
                }
            );
            assert_eq!(
                got[1].kind,
                AccountKind::Maildir {
                    path: "/home/me/Maildir".into()
                }
            );
            assert!(matches!(got[2].kind, AccountKind::Imap { port: 10143, .. }));
            Ok(())
        });
    }

    #[test]
    fn an_imap_account_missing_a_field_is_named() {
        let full = AccountSetting {
            name: "work".into(),
            address: "me@work.example".into(),
            kind: "imap".into(),
            path: None,
            host: Some("imap.work.example".into()),
            port: Some(993),
            user: Some("me".into()),
            password_env: Some("IRIS_WORK_PASSWORD".into()),
        };
        assert!(account(&full).is_ok());
        for field in ["host", "user", "password_env"] {
            let mut a = full.clone();
            match field {
                "host" => a.host = None,
                "user" => a.user = Some("  ".into()),
                _ => a.password_env = None,
            }
            let err = account(&a).unwrap_err().to_string();
            assert!(err.contains("`work`") && err.contains(field), "{err}");
        }
        let mut pop = full.clone();
        pop.kind = "pop3".into();
        assert!(account(&pop).unwrap_err().to_string().contains("pop3"));
    }
}
