//! The open-file limit against `limits.max_connections`, checked once at start-up.
//!
//! Owns: raising the soft `RLIMIT_NOFILE` to the hard one, and lowering `max_connections` (with a
//! warning naming both figures) when even that cannot hold every connection and its upstream
//! socket. Without it, a host opening idle sockets up to the cap made `accept` fail with
//! `Too many open files` and `/healthz` time out long before the cap was reached.
//! Must not: be called by anything but the serving command (it changes a process-wide limit).

use crate::config::LimitsConfig;

/// Descriptors kept for everything that is not a client connection: listener, store, Redis,
/// log, title requests, the blocking pool's files.
const RESERVED: u64 = 64;

/// How many client connections `open_files` descriptors can hold: each may need one more for its
/// upstream request.
#[must_use]
pub fn connections_that_fit(open_files: u64) -> usize {
    usize::try_from(open_files.saturating_sub(RESERVED) / 2).unwrap_or(usize::MAX)
}

/// Not even a handful of client connections fit the open-file limit.
#[derive(Debug, thiserror::Error)]
#[error(
    "the open-file limit ({open_files}, `ulimit -n`) leaves room for only {fit} client connections; raise it"
)]
pub struct TooFewFiles {
    open_files: u64,
    fit: usize,
}

/// Raises the soft limit as far as the hard one allows and fits `max_connections` under it.
/// Returns an error when not even a handful of connections fit.
pub fn fit(limits: &mut LimitsConfig) -> Result<(), TooFewFiles> {
    let open_files = match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(err) => {
            tracing::warn!(error = %err, "cannot read the open-file limit; limits.max_connections is not checked against it");
            return Ok(());
        }
    };
    let fit = connections_that_fit(open_files);
    if fit < 8 {
        return Err(TooFewFiles { open_files, fit });
    }
    if limits.max_connections > fit {
        tracing::warn!(
            configured = limits.max_connections,
            lowered_to = fit,
            open_files,
            "limits.max_connections lowered to fit the open-file limit (each connection may also hold an upstream socket); raise `ulimit -n` to serve more"
        );
        limits.max_connections = fit;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::connections_that_fit;

    #[test]
    fn each_connection_counts_twice_after_the_reserve() {
        assert_eq!(connections_that_fit(200), 68);
        assert_eq!(connections_that_fit(1024), 480);
        assert_eq!(connections_that_fit(10), 0);
    }
}
