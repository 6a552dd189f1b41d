//! [`PasskeyStore`] on both engines (migration 0021), and the passkey parts of a decision's unit
//! ([`Store::read_ceremony`], [`Store::use_passkey`], called by `decide`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use iris_core::passkey::{Ceremony, CeremonyPurpose, PasskeyRecord, PasskeyUse};
use iris_core::ports::{PasskeyChange, PasskeyStore, StoreError};

use crate::engine::Engine;
use crate::rows::{Cols, ColumnRead};
use crate::unit::{Stmt, WriteTx};
use crate::writes::finish_cas;
use crate::{timestamp_text, Store};

const CEREMONY_COLUMNS: &str =
    "id, purpose, approval_id, call_hash, state, nonce, device, created_at, expires_at, used_at";

const PASSKEY_COLUMNS: &str =
    "id, credential_id, name, key, added_by, created_at, last_used_at, removed_at";

fn ceremony_from_row<R: ColumnRead>(row: &R) -> Result<Ceremony, StoreError> {
    let c = Cols::new(row, "passkey_ceremonies", "id")?;
    let purpose_text = c.text("purpose")?;
    let purpose = CeremonyPurpose::parse(&purpose_text)
        .ok_or_else(|| c.corrupt("purpose", format!("unknown purpose `{purpose_text}`")))?;
    Ok(Ceremony {
        purpose,
        approval_id: c.opt_text("approval_id")?,
        call_hash: c.opt_text("call_hash")?,
        state: c.text("state")?,
        nonce: c.opt_text("nonce")?,
        device: c.text("device")?,
        created_at: c.time("created_at")?,
        expires_at: c.time("expires_at")?,
        used_at: c.opt_time("used_at")?,
        id: c.id,
    })
}

fn passkey_from_row<R: ColumnRead>(row: &R) -> Result<PasskeyRecord, StoreError> {
    let c = Cols::new(row, "passkeys", "id")?;
    Ok(PasskeyRecord {
        credential_id: c.text("credential_id")?,
        name: c.text("name")?,
        key: c.text("key")?,
        added_by: c.text("added_by")?,
        created_at: c.time("created_at")?,
        last_used_at: c.opt_time("last_used_at")?,
        removed_at: c.opt_time("removed_at")?,
        id: c.id,
    })
}

/// For which approval a ceremony may be used: `None` for a proof before the set of passkeys
/// changes, `Some((approval id, call hash))` for approving.
type Binding<'a> = Option<(&'a str, &'a str)>;

impl Store {
    /// Reads ceremony `id` inside the decision's transaction (`None` when it does not exist).
    pub(crate) async fn read_ceremony(
        &self,
        tx: &mut WriteTx,
        id: &str,
    ) -> Result<Option<Ceremony>, StoreError> {
        let rows = tx
            .fetch(
                Stmt::new(format!(
                    "SELECT {CEREMONY_COLUMNS} FROM passkey_ceremonies WHERE id = $1"
                ))
                .text(id),
                "reading a passkey ceremony",
            )
            .await?;
        rows.first().map(ceremony_from_row).transpose()
    }

    /// Uses a ceremony and updates its passkey in `tx`, each by compare-and-set: the ceremony
    /// unused, unlapsed by the store's time source, of the purpose and binding asked; the
    /// passkey not removed and its stored signature counter below the new one unless both are
    /// zero (WebAuthn §7.2 step 22: two overlapping ceremonies never lower it). Either refusal
    /// ends the unit with nothing written.
    pub(crate) async fn use_passkey(
        &self,
        tx: &mut WriteTx,
        binding: Binding<'_>,
        used: &PasskeyUse,
    ) -> Result<(), StoreError> {
        let (purpose, approval_id, call_hash) = match binding {
            Some((approval_id, call_hash)) => ("approve", Some(approval_id), Some(call_hash)),
            None => ("manage", None, None),
        };
        tx.exec_cas(
            self.timed(
                "UPDATE passkey_ceremonies SET used_at = $2 WHERE id = $3 AND used_at IS NULL \
                 AND expires_at > {now} AND purpose = $4 \
                 AND COALESCE(approval_id, '') = COALESCE($5, '') \
                 AND COALESCE(call_hash, '') = COALESCE($6, '')",
            )
            .text(&timestamp_text(used.at))
            .text(&used.ceremony_id)
            .text(purpose)
            .opt_text(approval_id)
            .opt_text(call_hash),
            "using a passkey ceremony",
        )
        .await?;
        tx.exec_cas(
            Stmt::new(
                "UPDATE passkeys SET key = $1, last_used_at = $2, sign_count = $4 \
                 WHERE credential_id = $3 AND removed_at IS NULL \
                 AND (sign_count < $4 OR (sign_count = 0 AND $4 = 0))",
            )
            .text(&used.key)
            .text(&timestamp_text(used.at))
            .text(&used.credential_id)
            .int(i64::from(used.counter)),
            "recording a passkey's use",
        )
        .await
    }

    /// Serialises changes to the set of passkeys on PostgreSQL (SQLite has one writer).
    async fn lock_passkeys(&self, tx: &mut WriteTx) -> Result<(), StoreError> {
        if self.engine == Engine::Postgres {
            tx.exec(
                Stmt::new("LOCK TABLE passkeys IN SHARE ROW EXCLUSIVE MODE"),
                "locking the passkeys",
            )
            .await?;
        }
        Ok(())
    }

    /// How many passkeys count, inside `tx`.
    async fn live_passkeys(&self, tx: &mut WriteTx) -> Result<i64, StoreError> {
        let rows = tx
            .fetch(
                Stmt::new("SELECT COUNT(*) AS n FROM passkeys WHERE removed_at IS NULL"),
                "counting passkeys",
            )
            .await?;
        Ok(rows
            .first()
            .and_then(|r| r.int_at("n").ok().flatten())
            .unwrap_or(0))
    }
}

/// Ends a unit of a passkey change: committed, or the compare-and-set's refusal as a sentence.
async fn finish_change(
    tx: WriteTx,
    written: Result<(), StoreError>,
    refused: &str,
) -> Result<PasskeyChange, StoreError> {
    if finish_cas(tx, written).await? {
        Ok(PasskeyChange::Done)
    } else {
        Ok(PasskeyChange::Refused(refused.to_string()))
    }
}

#[async_trait]
impl PasskeyStore for Store {
    async fn passkeys(&self, with_removed: bool) -> Result<Vec<PasskeyRecord>, StoreError> {
        let filter = if with_removed {
            ""
        } else {
            "WHERE removed_at IS NULL "
        };
        let rows = sqlx::query(&format!(
            "SELECT {PASSKEY_COLUMNS} FROM passkeys {filter}ORDER BY created_at, id"
        ))
        .fetch_all(&self.pool)
        .await
        .map_err(crate::rows::backend("listing passkeys"))?;
        rows.iter().map(passkey_from_row).collect()
    }

    async fn start_ceremony(&self, ceremony: &Ceremony) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO passkey_ceremonies (id, purpose, approval_id, call_hash, state, device, \
             created_at, expires_at, nonce) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&ceremony.id)
        .bind(ceremony.purpose.as_str())
        .bind(ceremony.approval_id.as_deref())
        .bind(ceremony.call_hash.as_deref())
        .bind(&ceremony.state)
        .bind(&ceremony.device)
        .bind(timestamp_text(ceremony.created_at))
        .bind(timestamp_text(ceremony.expires_at))
        .bind(ceremony.nonce.as_deref())
        .execute(&self.pool)
        .await
        .map_err(crate::rows::backend("storing a passkey ceremony"))?;
        Ok(())
    }

    async fn ceremony(&self, id: &str) -> Result<Option<Ceremony>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {CEREMONY_COLUMNS} FROM passkey_ceremonies WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(crate::rows::backend("reading a passkey ceremony"))?;
        row.as_ref().map(ceremony_from_row).transpose()
    }

    async fn add_passkey(
        &self,
        register_ceremony: &str,
        proof: Option<&PasskeyUse>,
        passkey: &PasskeyRecord,
        at: DateTime<Utc>,
    ) -> Result<PasskeyChange, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Err(e) = self.lock_passkeys(&mut tx).await {
            tx.rollback().await;
            return Err(e);
        }
        if proof.is_none() {
            match self.live_passkeys(&mut tx).await {
                Ok(0) => {}
                Ok(_) => {
                    tx.rollback().await;
                    return Ok(PasskeyChange::Refused(
                        "a passkey is registered already, so adding another needs an assertion \
                         from an existing one"
                            .into(),
                    ));
                }
                Err(e) => {
                    tx.rollback().await;
                    return Err(e);
                }
            }
        }
        let taken = tx
            .fetch(
                Stmt::new("SELECT id FROM passkeys WHERE credential_id = $1")
                    .text(&passkey.credential_id),
                "looking for a registered credential",
            )
            .await;
        match taken {
            Ok(rows) if rows.is_empty() => {}
            Ok(_) => {
                tx.rollback().await;
                return Ok(PasskeyChange::Refused(
                    "this passkey is registered already (a removed passkey cannot be added again)"
                        .into(),
                ));
            }
            Err(e) => {
                tx.rollback().await;
                return Err(e);
            }
        }
        let written = async {
            tx.exec_cas(
                self.timed(
                    "UPDATE passkey_ceremonies SET used_at = $2 WHERE id = $3 \
                     AND purpose = 'register' AND used_at IS NULL AND expires_at > {now}",
                )
                .text(&timestamp_text(at))
                .text(register_ceremony),
                "using a registration ceremony",
            )
            .await?;
            if let Some(proof) = proof {
                self.use_passkey(&mut tx, None, proof).await?;
            }
            tx.exec(
                Stmt::new(format!(
                    "INSERT INTO passkeys ({PASSKEY_COLUMNS}) \
                     VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL)"
                ))
                .text(&passkey.id)
                .text(&passkey.credential_id)
                .text(&passkey.name)
                .text(&passkey.key)
                .text(&passkey.added_by)
                .text(&timestamp_text(passkey.created_at)),
                "adding a passkey",
            )
            .await
        }
        .await;
        finish_change(
            tx,
            written,
            "the challenge was already used or lapsed (challenges last two minutes): try again",
        )
        .await
    }

    async fn remove_passkey(
        &self,
        id: &str,
        proof: Option<&PasskeyUse>,
        by: &str,
        at: DateTime<Utc>,
    ) -> Result<PasskeyChange, StoreError> {
        let mut tx = self.begin_write().await?;
        if let Err(e) = self.lock_passkeys(&mut tx).await {
            tx.rollback().await;
            return Err(e);
        }
        let written = async {
            if let Some(proof) = proof {
                self.use_passkey(&mut tx, None, proof).await?;
            }
            tx.exec_cas(
                Stmt::new(
                    "UPDATE passkeys SET removed_at = $1, removed_by = $2 \
                     WHERE id = $3 AND removed_at IS NULL",
                )
                .text(&timestamp_text(at))
                .text(by)
                .text(id),
                "removing a passkey",
            )
            .await
        }
        .await;
        finish_change(
            tx,
            written,
            "nothing was removed: the passkey does not exist or was removed already, or the \
             challenge was already used or lapsed",
        )
        .await
    }
}
