//! The manager's Events: kube's [`Recorder`], renewed after a bounded number of Events.
//!
//! kube's recorder keeps every Event it published for six minutes, to count a repeat into a
//! series instead of writing a new Event. A controller publishes about one Event per object,
//! so that cache held one Event per object: at 10,000 objects it was half of the manager's
//! memory (74 MiB against 38 MiB without Events, `scripts/measure-sharding`). client-go's
//! recorder bounds its own cache (an LRU of 4,096 keys); this one starts a new recorder, with
//! an empty cache, every [`KEPT`] Events. A repeat that spans a renewal is a new Event
//! instead of a series count.

use std::sync::Mutex;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, Recorder, Reporter};

/// How many Events a recorder publishes, and so keeps at most, before it is renewed.
pub const KEPT: usize = 1024;

/// Publishes Events as kube's [`Recorder`] does, its cache bounded to the last [`KEPT`].
pub struct Events {
    client: Client,
    reporter: Reporter,
    kept: usize,
    /// The recorder, and how many Events it has published.
    current: Mutex<(Recorder, usize)>,
}

impl Events {
    /// Events written with `client`, naming `reporter` as their source.
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self::keeping(client, reporter, KEPT)
    }

    fn keeping(client: Client, reporter: Reporter, kept: usize) -> Self {
        let recorder = Recorder::new(client.clone(), reporter.clone());
        Self {
            client,
            reporter,
            kept,
            current: Mutex::new((recorder, 0)),
        }
    }

    /// Publishes `event` about the object `reference` names ([`Recorder::publish`]).
    pub async fn publish(
        &self,
        event: &Event,
        reference: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let recorder = {
            let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
            if current.1 >= self.kept {
                let fresh = Recorder::new(self.client.clone(), self.reporter.clone());
                *current = (fresh, 0);
            }
            current.1 += 1;
            current.0.clone()
        };
        recorder.publish(event, reference).await
    }
}

#[cfg(all(test, feature = "testing"))]
mod tests {
    use http::Method;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Resource as _;
    use kube::runtime::events::EventType;

    use super::*;
    use crate::testing::mock;

    /// The cache goes with a renewal: the same Event published again is a series count (a
    /// PATCH) while the recorder remembers it, and a new Event (a POST) after the renewal.
    #[tokio::test]
    async fn a_renewed_recorder_forgets_the_events_it_published() {
        let (ctx, server) = mock::context();
        let reporter = Reporter {
            controller: "test".into(),
            instance: None,
        };
        let events = Events::keeping(ctx.client.clone(), reporter, 2);
        let mut object = ConfigMap::default();
        object.metadata.name = Some("web".into());
        object.metadata.namespace = Some("default".into());
        let event = Event {
            type_: EventType::Normal,
            reason: "Available".into(),
            note: Some("ready".into()),
            action: "Reconcile".into(),
            secondary: None,
        };
        for _ in 0..3 {
            events
                .publish(&event, &object.object_ref(&()))
                .await
                .unwrap();
        }
        let methods: Vec<Method> = server.writes().into_iter().map(|s| s.method).collect();
        assert_eq!(methods, [Method::POST, Method::PATCH, Method::POST]);
    }
}
