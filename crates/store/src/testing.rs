//! Test support for every crate whose tests need a real PostgreSQL database (feature
//! `testing`): each test gets a fresh `iris_test_<random>` database, dropped when it ends. When
//! the server is unreachable the test fails and says how to start it; it never passes silently.

use sqlx::{Connection, PgConnection};

/// Where tests create their databases when `IRIS_TEST_POSTGRES_URL` is unset.
pub const DEFAULT_POSTGRES_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The admin url the PostgreSQL tests create databases through.
pub fn postgres_admin_url() -> String {
    std::env::var("IRIS_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| DEFAULT_POSTGRES_ADMIN_URL.to_owned())
}

/// `url` naming database `name` instead of its own (query parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority = base.find("://").map_or(0, |i| i + 3);
    let path = base[authority..]
        .find('/')
        .map_or(base.len(), |i| authority + i);
    let mut named = format!("{}/{name}", &base[..path]);
    if let Some(query) = query {
        named.push('?');
        named.push_str(query);
    }
    named
}

/// Connects to the admin database, failing the test with how to start PostgreSQL.
pub async fn admin_connection(admin_url: &str) -> PgConnection {
    match PgConnection::connect(admin_url).await {
        Ok(conn) => conn,
        Err(e) => panic!(
            "PostgreSQL is not reachable at {admin_url}: {e}\n\
             The PostgreSQL half of the store suite needs a running server. Start it with\n    \
             pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n\
             or set IRIS_TEST_POSTGRES_URL to the admin url of a server where this user may \
             CREATE DATABASE."
        ),
    }
}

/// Creates `iris_test_<random>` and returns its url and the guard that drops it.
pub async fn fresh_postgres_database() -> (String, DropDatabase) {
    let admin_url = postgres_admin_url();
    let mut admin = admin_connection(&admin_url).await;
    let name = format!("iris_test_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("creating the test database {name} via {admin_url}: {e}"));
    let _ = admin.close().await;
    let url = with_database(&admin_url, &name);
    (url, DropDatabase { admin_url, name })
}

/// Drops a test database when the test ends, passed or failed (best effort: a failure to drop
/// is ignored, and leaves an `iris_test_…` database behind).
pub struct DropDatabase {
    admin_url: String,
    name: String,
}

impl Drop for DropDatabase {
    fn drop(&mut self) {
        let (admin_url, name) = (self.admin_url.clone(), self.name.clone());
        // The test's own runtime is shutting down or blocked in this drop: use a thread with a
        // runtime of its own. `WITH (FORCE)` ends the connections the store's pool still holds.
        let dropper = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut conn = PgConnection::connect(&admin_url).await.ok()?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut conn)
                    .await
                    .ok()?;
                conn.close().await.ok()
            })
        });
        let _ = dropper.join();
    }
}

/// One bare commit through `store`'s own writer (the path every unit of work takes): a unit
/// holding one `INSERT INTO bench_commit (n) VALUES (n)`, committed. The table must exist
/// (`CREATE TABLE bench_commit (n BIGINT NOT NULL)`). For benchmarks, which read a cycle
/// against `commits × ` this.
///
/// # Errors
/// [`iris_core::ports::StoreError::Backend`] when the insert or the commit fails.
pub async fn bare_commit(store: &crate::Store, n: i64) -> Result<(), iris_core::ports::StoreError> {
    let mut tx = store.begin_write().await?;
    tx.exec(
        crate::unit::Stmt::new("INSERT INTO bench_commit (n) VALUES ($1)").int(n),
        "a bare commit",
    )
    .await?;
    tx.commit().await
}
