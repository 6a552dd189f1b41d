//! The TLS crypto provider of IRIS's outgoing HTTPS: ring, for every client in the process.
//!
//! Two HTTP client lines are linked: reqwest 0.12 (Web Push, Telegram, the CLI's remote mode,
//! CalDAV), which is built with ring, and reqwest 0.13 (async-openai's model client and rmcp's
//! streamable-HTTP client), whose default provider is aws-lc-rs. That default compiled a second
//! crypto library from C (aws-lc-sys, the largest single build step on a bare machine) for the
//! same work, so reqwest 0.13 is linked without a provider (`rustls-no-provider`) and takes the
//! process-wide default this module installs. A reqwest 0.13 client built before [`use_ring`]
//! panics ("No rustls crypto provider is configured"), so every place that builds one calls it
//! first.

/// Installs ring as the process's default rustls crypto provider, once; later calls (and a
/// provider someone else installed first) leave it as it is. Never fails.
pub fn use_ring() {
    // `install_default` refuses a second install with the provider it was given back: that is
    // the "already installed" case, not an error.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use super::use_ring;

    /// reqwest 0.13 panics building a client when no provider is installed: after
    /// [`use_ring`] one is, it is ring's, and a second call changes nothing.
    #[test]
    fn ring_is_the_process_default_after_use_ring() {
        use_ring();
        use_ring();
        let installed = rustls::crypto::CryptoProvider::get_default().expect("a default provider");
        let ring = rustls::crypto::ring::default_provider();
        let suites = |p: &rustls::crypto::CryptoProvider| {
            p.cipher_suites
                .iter()
                .map(|s| s.suite())
                .collect::<Vec<_>>()
        };
        assert_eq!(suites(installed), suites(&ring));
        // A client of the line that has no provider of its own builds (it would panic).
        let _client = async_openai::Client::with_config(async_openai::config::OpenAIConfig::new());
    }
}
