//! Devices and pairing links ([`DeviceStore`], [`PairingStore`]) on both engines. Tokens and
//! pairing codes are stored only as their hex SHA-256; a revoked device keeps its row.

use iris_core::ports::{DeviceStore, PairingStore};

use crate::Store;

/// How often a device's last use is recorded at most (the Devices page shows it to the minute).
const LAST_USED_EVERY: chrono::TimeDelta = chrono::TimeDelta::seconds(60);

#[async_trait::async_trait]
impl DeviceStore for Store {
    /// [`StoreError::Backend`] naming the rule when a live device already has the name or
    /// the token hash is already stored.
    async fn add(
        &self,
        device: &iris_core::ports::Device,
        token_hash: &str,
    ) -> Result<(), iris_core::ports::StoreError> {
        use crate::timestamp_text;
        sqlx::query(
            "INSERT INTO devices (name, scope, token_hash, created_at, last_used_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&device.name)
        .bind(device.scope.as_str())
        .bind(token_hash)
        .bind(timestamp_text(device.created_at))
        .bind(device.last_used_at.map(timestamp_text))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(|e| crate::rows::device_add_error(&device.name, e))
    }

    async fn authenticate(
        &self,
        token_hash: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Option<iris_core::ports::Device>, iris_core::ports::StoreError> {
        // A read decides: a request is never refused because the database is busy writing.
        let rows = sqlx::query(
            "SELECT name, scope, created_at, last_used_at FROM devices \
             WHERE token_hash = $1 AND revoked_at IS NULL",
        )
        .bind(token_hash)
        .fetch_all(&self.pool)
        .await
        .map_err(crate::rows::backend("authenticating a device"))?;
        let Some(mut device) = rows.first().map(crate::rows::device_from_row).transpose()? else {
            return Ok(None);
        };
        // The use is recorded at most once a minute per device, and only as a courtesy: a write
        // that cannot get the lock (a long mail sync) is skipped, not an error.
        let stale = device
            .last_used_at
            .is_none_or(|last| at - last >= LAST_USED_EVERY);
        if stale {
            let touched = sqlx::query(
                "UPDATE devices SET last_used_at = $1 \
                 WHERE token_hash = $2 AND revoked_at IS NULL",
            )
            .bind(crate::timestamp_text(at))
            .bind(token_hash)
            .execute(&self.pool)
            .await;
            match touched {
                Ok(_) => device.last_used_at = Some(at),
                Err(e) => {
                    tracing::debug!(device = %device.name, error = %e, "recording a device's last use skipped")
                }
            }
        }
        Ok(Some(device))
    }

    async fn is_live(&self, token_hash: &str) -> Result<bool, iris_core::ports::StoreError> {
        let rows =
            sqlx::query("SELECT name FROM devices WHERE token_hash = $1 AND revoked_at IS NULL")
                .bind(token_hash)
                .fetch_all(&self.pool)
                .await
                .map_err(crate::rows::backend("checking a device"))?;
        Ok(!rows.is_empty())
    }

    async fn list(&self) -> Result<Vec<iris_core::ports::Device>, iris_core::ports::StoreError> {
        let rows = sqlx::query(
            "SELECT name, scope, created_at, last_used_at FROM devices \
             WHERE revoked_at IS NULL ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(crate::rows::backend("listing devices"))?;
        rows.iter().map(crate::rows::device_from_row).collect()
    }

    async fn revoke(&self, name: &str) -> Result<bool, iris_core::ports::StoreError> {
        // One transaction: a revoked device keeps no push subscription.
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(crate::rows::backend("revoking a device"))?;
        let done = sqlx::query(&format!(
            "UPDATE devices SET revoked_at = {} WHERE name = $2 AND revoked_at IS NULL",
            self.now_sql()
        ))
        .bind(self.now_param())
        .bind(name)
        .execute(&mut *tx)
        .await
        .map_err(crate::rows::backend("revoking a device"))?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        Store::remove_device_subscriptions(&mut *tx, name).await?;
        tx.commit()
            .await
            .map_err(crate::rows::backend("revoking a device"))?;
        Ok(true)
    }
}

#[async_trait::async_trait]
impl PairingStore for Store {
    async fn create_pairing(
        &self,
        code_hash: &str,
        link: &iris_core::pairing::PairingLink,
    ) -> Result<(), iris_core::ports::StoreError> {
        use crate::timestamp_text;
        sqlx::query(
            "INSERT INTO pairing_links (code_hash, scope, created_by, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(code_hash)
        .bind(link.scope.as_str())
        .bind(&link.created_by)
        .bind(timestamp_text(link.created_at))
        .bind(timestamp_text(link.expires_at))
        .execute(&self.pool)
        .await
        .map(|_| ())
        .map_err(crate::rows::backend("storing a pairing link"))
    }

    async fn pairing(
        &self,
        code_hash: &str,
    ) -> Result<Option<iris_core::pairing::PairingLink>, iris_core::ports::StoreError> {
        let rows = sqlx::query(
            "SELECT code_hash, scope, created_by, created_at, expires_at, used_at, device_name \
             FROM pairing_links WHERE code_hash = $1",
        )
        .bind(code_hash)
        .fetch_all(&self.pool)
        .await
        .map_err(crate::rows::backend("reading a pairing link"))?;
        rows.first().map(crate::rows::pairing_from_row).transpose()
    }

    async fn redeem_pairing(
        &self,
        code_hash: &str,
        device_name: &str,
        token_hash: &str,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Result<iris_core::pairing::Redemption, iris_core::ports::StoreError> {
        use crate::rows::backend;
        use crate::timestamp_text;
        use iris_core::pairing::Redemption;
        let now = timestamp_text(at);
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(backend("starting a pairing"))?;
        // The compare-and-set: one statement, so of two redemptions at once exactly one
        // finds the link unused (DESIGN §6: the database serialises writers).
        let claimed = sqlx::query(
            "UPDATE pairing_links SET used_at = $1, device_name = $2 \
             WHERE code_hash = $3 AND used_at IS NULL AND expires_at > $1 \
             RETURNING scope",
        )
        .bind(&now)
        .bind(device_name)
        .bind(code_hash)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend("redeeming a pairing link"))?;
        let Some(row) = claimed.first() else {
            tx.rollback().await.map_err(backend("ending a pairing"))?;
            let link = iris_core::ports::PairingStore::pairing(self, code_hash).await?;
            return Ok(match link {
                None => Redemption::Unknown,
                // Not usable now (the statement found it so): used or lapsed.
                Some(link) => link.unusable_at(at).unwrap_or(Redemption::Lapsed {
                    expires_at: link.expires_at,
                }),
            });
        };
        let scope_text: String = sqlx::Row::try_get::<Option<String>, _>(row, "scope")
            .map_err(backend("reading a pairing link's scope"))?
            .unwrap_or_default();
        let scope = iris_core::ports::Scope::parse(&scope_text).ok_or_else(|| {
            iris_core::ports::StoreError::Corrupt {
                id: "pairing link".to_owned(),
                reason: format!("unknown scope `{scope_text}`"),
            }
        })?;
        let added = sqlx::query(
            "INSERT INTO devices (name, scope, token_hash, created_at, last_used_at) \
             VALUES ($1, $2, $3, $4, $4)",
        )
        .bind(device_name)
        .bind(scope.as_str())
        .bind(token_hash)
        .bind(&now)
        .execute(&mut *tx)
        .await;
        match added {
            Ok(_) => {}
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                // The link stays unused: the person may pick another name.
                tx.rollback().await.map_err(backend("ending a pairing"))?;
                return Ok(Redemption::NameTaken);
            }
            Err(e) => return Err(crate::rows::device_add_error(device_name, e)),
        }
        tx.commit().await.map_err(backend("committing a pairing"))?;
        Ok(Redemption::Paired(iris_core::ports::Device {
            name: device_name.to_owned(),
            scope,
            created_at: at,
            last_used_at: Some(at),
        }))
    }
}
