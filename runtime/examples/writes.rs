//! The least any client does for the work a generated Guestbook manager does per object: for
//! every object of a kind, its finalizer (a patch), its status (a server-side apply) and an
//! Event, `CONCURRENCY` objects at once, from one list and no watch. What the API server can do
//! for that work, as `scripts/measure-sharding` and `scripts/measure-reconcile` compare the
//! manager against. With `--watch`, the objects come from a watch of the kind that stays open
//! while the writes run, cached as a controller's are: what watching costs.
//!
//! ```sh
//! cargo run --release -p kube-scaffold-runtime --example writes -- [--watch] <group> <plural> <Kind> [concurrency]
//! ```

use std::time::Instant;

use anyhow::Context as _;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let watching = args.first().is_some_and(|arg| arg == "--watch");
    if watching {
        args.remove(0);
    }
    let [group, plural, kind, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: writes [--watch] <group> <plural> <Kind> [concurrency]");
    };
    let concurrency: usize = match rest.first() {
        Some(count) => count.parse().context("the concurrency is a number")?,
        None => 32,
    };
    let client = Client::try_default().await?;
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let started = Instant::now();
    let objects = match watching {
        false => all.list(&ListParams::default()).await?.items,
        true => watched(all.clone(), resource.clone()).await?,
    };
    let count = objects.len();
    let reporter = Reporter {
        controller: "writes".into(),
        instance: None,
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let failures = futures::stream::iter(objects)
        .map(|obj| write(&client, &resource, &recorder, obj))
        .buffer_unordered(concurrency.max(1))
        .filter(|result| std::future::ready(result.is_err()))
        .count()
        .await;
    println!(
        "{count} objects, concurrency {concurrency}: {:.1} s, {failures} failed",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The objects of `all` as a watch's first list gives them, cached; the watch goes on in the
/// background (and the cache with it) until the process ends.
async fn watched(
    all: Api<DynamicObject>,
    resource: ApiResource,
) -> anyhow::Result<Vec<DynamicObject>> {
    let writer = reflector::store::Writer::new(resource);
    let cache = writer.as_reader();
    let events = watcher(all, watcher::Config::default()).reflect(writer);
    tokio::spawn(events.for_each(|_| std::future::ready(())));
    cache.wait_until_ready().await?;
    Ok(cache
        .state()
        .iter()
        .map(|obj| DynamicObject::clone(obj))
        .collect())
}

/// The three writes of one object.
async fn write(
    client: &Client,
    resource: &ApiResource,
    recorder: &Recorder,
    obj: DynamicObject,
) -> anyhow::Result<()> {
    let namespace = obj.namespace().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &namespace, resource);
    let name = obj.name_any();
    let finalizer: json_patch::Patch = serde_json::from_value(json!([
        { "op": "add", "path": "/metadata/finalizers", "value": ["writes.example/cleanup"] }
    ]))?;
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::<()>::Json(finalizer),
    )
    .await?;
    let generation = obj.metadata.generation.unwrap_or(1);
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let status = json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "status": {
            "observedGeneration": generation,
            "conditions": [{
                "type": "Available", "status": "True", "reason": "Reconciled",
                "message": "written", "lastTransitionTime": now,
                "observedGeneration": generation,
            }],
        },
    });
    let apply = PatchParams::apply("writes").force();
    api.patch_status(&name, &apply, &Patch::Apply(&status))
        .await?;
    let event = Event {
        type_: EventType::Normal,
        reason: "Available".into(),
        note: Some("written".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    recorder.publish(&event, &obj.object_ref(resource)).await?;
    Ok(())
}
