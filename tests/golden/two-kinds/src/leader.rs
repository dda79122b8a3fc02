//! Leader election (`--leader-elect`): of several replicas, only the holder of a Lease in the
//! pod's namespace runs the controllers. It stops when it loses the lease and releases the
//! lease when it shuts down, so that a successor takes over at once.

use std::time::Duration;

use anyhow::Context as _;
use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How long a lease lasts without renewal.
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long before expiry the holder renews it.
const RENEW_GRACE: Duration = Duration::from_secs(5);

/// The lease, while this process holds it.
pub struct Leadership {
    is_leader: watch::Receiver<bool>,
    manager: JoinHandle<kube_lease_manager::Result<kube_lease_manager::LeaseManager>>,
}

/// Waits until this process (`identity`, its pod name) holds the lease `name` in `namespace`.
pub async fn acquire(
    client: Client,
    namespace: &str,
    name: &str,
    identity: &str,
) -> anyhow::Result<Leadership> {
    let manager = LeaseManagerBuilder::new(client, name)
        .with_namespace(namespace)
        .with_identity(identity)
        .with_duration(LEASE_DURATION.as_secs())
        .with_grace(RENEW_GRACE.as_secs())
        .build()
        .await
        .with_context(|| format!("cannot use the lease {namespace}/{name}"))?;
    let (mut is_leader, manager) = manager.watch().await;
    tracing::info!(lease = %format!("{namespace}/{name}"), %identity, "waiting to lead");
    while !*is_leader.borrow_and_update() {
        is_leader
            .changed()
            .await
            .context("the lease manager stopped before this process became the leader")?;
    }
    tracing::info!(%identity, "became the leader");
    Ok(Leadership { is_leader, manager })
}

impl Leadership {
    /// Resolves once this process no longer holds the lease.
    pub async fn lost(&mut self) {
        while *self.is_leader.borrow_and_update() {
            if self.is_leader.changed().await.is_err() {
                return;
            }
        }
    }

    /// Gives the lease up, so that another replica can lead without waiting for it to expire.
    pub async fn release(self) {
        drop(self.is_leader);
        match self.manager.await {
            Ok(Ok(_)) => tracing::info!("released the leader lease"),
            Ok(Err(err)) => tracing::warn!(error = %err, "could not release the leader lease"),
            Err(err) => tracing::warn!(error = %err, "the lease manager failed"),
        }
    }
}
