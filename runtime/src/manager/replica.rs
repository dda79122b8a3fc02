//! A sharded manager's run: this replica's Lease held, its controllers run on its share, and
//! the sharder run while it holds the leader lease.

use std::sync::Arc;

use anyhow::Context as _;
use tokio::sync::watch;
use tracing::info;

use crate::controller::{self, Context, Start};
use crate::leader::{Elector, Timing};
use crate::sharding::ring::Ring;
use crate::sharding::{Mode, Shard, check_name, server, sharder};

/// This replica of a sharded manager, before it runs.
pub(crate) struct Replica {
    shard: Arc<Shard>,
    leading: watch::Sender<bool>,
    members: watch::Sender<Ring>,
    /// Where the Leases are.
    namespace: String,
    /// The leader lease, whose holder runs the sharder.
    leader: String,
    timing: Timing,
}

impl Replica {
    /// The replica `name` (the pod's) of the ring `ring` (the project's), its Leases in
    /// `namespace` beside the leader lease `leader`, renewed with `timing`.
    pub(crate) fn new(
        ring: &str,
        name: &str,
        namespace: &str,
        leader: &str,
        timing: Timing,
        mode: Mode,
    ) -> anyhow::Result<Self> {
        check_name(name)
            .map_err(anyhow::Error::msg)
            .context("--shard-name (POD_NAME) names this replica's shard: pass a pod's name")?;
        let (leading, leading_rx) = watch::channel(false);
        let (members, members_rx) = watch::channel(Ring::default());
        let shard = Arc::new(Shard::new(name, ring, leading_rx, members_rx, mode));
        Ok(Self {
            shard,
            leading,
            members,
            namespace: namespace.to_string(),
            leader: leader.to_string(),
            timing,
        })
    }

    /// The shard, for the controllers' context.
    pub(crate) fn shard(&self) -> Arc<Shard> {
        self.shard.clone()
    }

    /// Holds the shard's Lease, then runs `controllers` on this shard's objects until the
    /// shutdown, and the sharder whenever this replica holds the leader lease. Fails, as a
    /// leader does, when either Lease is lost; releases both on the way out, once the
    /// controllers have stopped, so that the shard's objects move at once.
    pub(crate) async fn run<S: Send + Sync + 'static>(
        self,
        ctx: Arc<Context<S>>,
        controllers: &[Start<S>],
    ) -> anyhow::Result<()> {
        let (namespace, leader, timing) =
            (self.namespace.as_str(), self.leader.as_str(), self.timing);
        let identity = super::identity();
        let shard = self.shard.clone();
        let client = ctx.client.clone();
        if shard.mode == Mode::Server {
            server::check_server(&client, namespace).await?;
        }
        let mut member = Elector::new(client.clone(), namespace, &shard.lease(), &identity, timing)
            .labelled(shard.lease_labels());
        ctx.health.standby(timing.lease_duration);
        tokio::select! {
            () = member.acquire(&ctx.health) => info!(shard = %shard.name, "holding the shard's lease"),
            () = ctx.shutdown.cancelled() => return Ok(()),
        }
        let mut sharder = Elector::new(client.clone(), namespace, leader, &identity, timing);
        ctx.metrics.set_leading(leader, false);
        let outcome = {
            let controllers =
                controller::supervise(ctx.clone(), controllers, controller::SHUTDOWN_GRACE);
            // The server-side mode: the ring record followed, and published while leading.
            let (records, records_rx) = watch::channel(None);
            let follow = async {
                match shard.mode {
                    Mode::Server => {
                        let namespace = namespace.to_string();
                        server::follow(client.clone(), shard.clone(), namespace, records).await
                    }
                    Mode::Labels => std::future::pending().await,
                }
            };
            let lead = async {
                sharder.acquire(&ctx.health).await;
                ctx.metrics.set_leading(leader, true);
                self.leading.send_replace(true);
                let members = sharder::members(
                    client.clone(),
                    shard.clone(),
                    namespace.to_string(),
                    timing,
                    &self.members,
                );
                let publish = async {
                    match shard.mode {
                        Mode::Server => {
                            let (namespace, live) =
                                (namespace.to_string(), self.members.subscribe());
                            server::publish(
                                client.clone(),
                                shard.clone(),
                                namespace,
                                live,
                                records_rx,
                            )
                            .await
                        }
                        Mode::Labels => std::future::pending().await,
                    }
                };
                tokio::select! {
                    lost = sharder.keep() => lost,
                    () = members => unreachable!("the members are kept for ever"),
                    () = publish => unreachable!("the ring is published for ever"),
                }
            };
            tokio::select! {
                outcome = controllers => outcome,
                () = follow => unreachable!("the ring is followed for ever"),
                lost = member.keep() => {
                    ctx.health.fail(lost.to_string());
                    Err(anyhow::anyhow!("the shard's lease: {lost}: stopping, so that no other replica reconciles its objects at once"))
                }
                lost = lead => {
                    ctx.health.fail(lost.to_string());
                    Err(anyhow::anyhow!("{lost}: stopping, so that only one replica assigns the objects"))
                }
            }
        };
        ctx.metrics.set_leading(leader, false);
        sharder.release().await;
        member.release().await;
        outcome
    }
}
