//! The controller of `Memcached` (example.com/v1alpha1).

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::Api;
use kube::runtime::controller::Action;
use kube::runtime::events::EventType;
use kube::{Resource, ResourceExt};
use kube_scaffold_runtime::children::{self, Applied, Child, Owned};
use kube_scaffold_runtime::conditions;
use kube_scaffold_runtime::controller::{Builder, Error, Result, rule};
use tracing::instrument;

use crate::api::example_com::v1alpha1 as example_comv1alpha1;
use crate::controller::Context;

// The kinds a `Memcached` owns, and what builds them.
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::core::v1::Capabilities;
use k8s_openapi::api::core::v1::Container;
use k8s_openapi::api::core::v1::ContainerPort;
use k8s_openapi::api::core::v1::PodSecurityContext;
use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::api::core::v1::SeccompProfile;
use k8s_openapi::api::core::v1::SecurityContext;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The kind this controller reconciles.
pub type Object = example_comv1alpha1::Memcached;
/// Its status.
pub type Status = example_comv1alpha1::MemcachedStatus;
/// The field manager of the status this controller writes with server-side apply.
pub const FIELD_MANAGER: &str = "memcached-controller";
/// This controller's name in metrics and logs.
pub const CONTROLLER: &str = "memcached";
/// The conditions this controller sets; others' stay theirs.
const CONDITIONS: &[&str] = &[
    conditions::AVAILABLE,
    conditions::PROGRESSING,
    conditions::DEGRADED,
];
/// The kinds a `Memcached` owns, each built by its `Child` impl below: the controller watches
/// them, applies them and reports them in the status (`kube_scaffold_runtime::children`).
const OWNED: &[Owned<Object, crate::State>] = &[
    Owned::of::<Deployment>(),
    // More: a `Child` impl for the kind below, and `Owned::of::<Kind>()` here; or, for any
    // number of children of a kind that `apply` names and makes, `Owned::many::<Kind>()`
    // (`children::Children`; docs/commands.md, "Many children of one kind").
];
/// The image of the pods a `Memcached` runs (`--image`).
const IMAGE: &str = "memcached:1.6.26-alpine3.19";
/// Their command, comma-separated (`--image-container-command`).
const COMMAND: &str = "memcached,--memory-limit=64,-o,modern,-v";
/// The port they listen on unless the spec says otherwise (`--image-container-port`).
const PORT: i32 = 11211;
/// The user they run as (`--run-as-user`).
const RUN_AS_USER: i64 = 1001;

/// Runs this controller until shutdown: what the manager starts (`super::CONTROLLERS`). Every
/// `Memcached` is reconciled when its spec, labels, annotations or finalizers change (not its
/// status alone) or one of its children (`OWNED`) changes, and again about every 5 minutes
/// (`.resync(..)`), up to 32 at once (`.concurrency(..)`); a failed reconcile is retried after
/// 5 s, then later and later up to 5 minutes.
pub fn start(ctx: Arc<Context>) -> BoxFuture<'static, ()> {
    Builder::new(CONTROLLER).owns(OWNED).start(ctx, reconcile)
}

/// Brings the cluster to the state a `Memcached` asks for.
#[instrument(skip_all, fields(name = %obj.name_any(), namespace = obj.namespace()))]
pub async fn reconcile(obj: Arc<Object>, ctx: Arc<Context>) -> Result<Action> {
    let namespace = obj.namespace().ok_or_else(|| {
        Error::InvalidObject(format!(
            "a namespaced {} has no namespace",
            Object::kind(&())
        ))
    })?;
    let objects = Api::<Object>::namespaced(ctx.client.clone(), &namespace);
    // Objects with an owner reference to this one are deleted with it by Kubernetes' garbage
    // collector. To clean up anything else before an object goes, scaffold the controller
    // with `--finalizer` (see the README's "Nothing hangs on uninstall").
    if obj.meta().deletion_timestamp.is_some() {
        // Being deleted (a foreground deletion waits for its children, or another's
        // finalizer): applying now would make again what the garbage collector removes.
        return Ok(Action::await_change());
    }
    apply(&obj, &objects, &ctx).await
}

/// The object exists and is not being deleted: make the world match its spec.
async fn apply(obj: &Object, objects: &Api<Object>, ctx: &Context) -> Result<Action> {
    // TODO(user): your logic here. Read `obj.spec`, create or update what it asks for, and
    // report what you observed through the conditions below.

    // The children in `OWNED`, applied; the conditions report them.
    let mut foreign = Vec::new();
    let mut waiting = Vec::new();
    for owned in OWNED {
        match (owned.apply)(obj, ctx, FIELD_MANAGER).await? {
            Applied::Ready => {}
            Applied::NotReady(why) => waiting.push(why),
            Applied::Foreign(why) => foreign.push(why),
        }
    }
    let (available, reason, message) = if !foreign.is_empty() {
        let message = foreign.join("; ");
        (conditions::Status::False, "ResourceExists", message)
    } else if !waiting.is_empty() {
        let message = waiting.join("; ");
        (conditions::Status::False, "Progressing", message)
    } else {
        let message = format!("The {} is reconciled", Object::kind(&()));
        (conditions::Status::True, "Reconciled", message)
    };

    let generation = obj.meta().generation;
    let current = obj.status.clone().unwrap_or_default();
    let was_available = conditions::is_true(&current.conditions, conditions::AVAILABLE);
    let progressing = match waiting.is_empty() {
        true => (conditions::Status::False, "Ready", "Every child is ready"),
        false => (conditions::Status::True, "Progressing", message.as_str()),
    };
    let degraded = match foreign.is_empty() {
        true => (conditions::Status::False, "Ready", "No conflicts"),
        false => (conditions::Status::True, "ResourceExists", message.as_str()),
    };
    let mut observed = current.conditions.clone();
    for (type_, (status, reason, message)) in [
        (conditions::PROGRESSING, progressing),
        (conditions::DEGRADED, degraded),
        (conditions::AVAILABLE, (available, reason, message.as_str())),
    ] {
        observed = conditions::set(&observed, type_, status, reason, message, generation);
    }
    let status = Status {
        observed_generation: generation,
        conditions: observed,
    };
    if obj.status.as_ref() != Some(&status) {
        // Only this controller's conditions: another manager's stay its own.
        conditions::apply_status(objects, obj, &status, CONDITIONS, FIELD_MANAGER).await?;
    }
    let event = if available == conditions::Status::True && !was_available {
        let note = format!("{} {} is available", Object::kind(&()), obj.name_any());
        Some((EventType::Normal, "Available", note))
    } else if reason == "ResourceExists" && obj.status.as_ref() != Some(&status) {
        Some((EventType::Warning, reason, message))
    } else {
        None
    };
    if let Some((type_, reason, note)) = event {
        ctx.publish(obj, type_, reason, note).await;
    }
    Ok(Action::await_change())
}

/// The `Deployment` a `Memcached` owns (`--owns apps/v1/Deployment`).
impl Child<Object> for Deployment {
    fn build(owner: &Object) -> Self {
        let labels = children::labels(owner);
        let port = owner.spec.container_port.unwrap_or(PORT);
        let container = Container {
            name: CONTROLLER.into(),
            image: Some(IMAGE.into()),
            image_pull_policy: Some("IfNotPresent".into()),
            command: Some(COMMAND.split(',').map(String::from).collect()),
            ports: Some(vec![ContainerPort {
                container_port: port,
                ..ContainerPort::default()
            }]),
            security_context: Some(SecurityContext {
                run_as_non_root: Some(true),
                run_as_user: Some(RUN_AS_USER),
                allow_privilege_escalation: Some(false),
                capabilities: Some(Capabilities {
                    drop: Some(vec!["ALL".into()]),
                    ..Capabilities::default()
                }),
                ..SecurityContext::default()
            }),
            ..Container::default()
        };
        let pods = PodSpec {
            containers: vec![container],
            security_context: Some(PodSecurityContext {
                run_as_non_root: Some(true),
                seccomp_profile: Some(SeccompProfile {
                    type_: "RuntimeDefault".into(),
                    ..SeccompProfile::default()
                }),
                ..PodSecurityContext::default()
            }),
            ..PodSpec::default()
        };
        Self {
            metadata: children::meta(owner),
            spec: Some(DeploymentSpec {
                replicas: Some(owner.spec.size.unwrap_or(1)),
                selector: LabelSelector {
                    match_labels: Some(labels.clone()),
                    ..LabelSelector::default()
                },
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(labels),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(pods),
                },
                ..DeploymentSpec::default()
            }),
            ..Self::default()
        }
    }

    fn not_ready(&self) -> Option<String> {
        let wanted = self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let status = self.status.as_ref();
        let available = status.and_then(|s| s.available_replicas).unwrap_or(0);
        let why = format!("{available} of {wanted} replicas are available");
        (available < wanted).then_some(why)
    }
}

/// The permissions this controller needs; `make manifests` writes them to `config/rbac/role.yaml`.
pub fn rbac_rules() -> Vec<PolicyRule> {
    let group = Object::group(&());
    let resource = Object::plural(&());
    let status = format!("{resource}/status");
    // `update` on finalizers: owner references that block the owner's deletion need it.
    let finalizers = format!("{resource}/finalizers");
    vec![
        rule(&group, &resource, &["get", "list", "watch"]),
        // Status is written with server-side apply.
        rule(&group, &status, &["get", "patch"]),
        rule(&group, &finalizers, &["update"]),
    ]
    .into_iter()
    .chain(OWNED.iter().flat_map(|owned| (owned.rules)()))
    .collect()
}

#[cfg(test)]
mod tests {
    use http::Method;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use kube_scaffold_runtime::controller::observe;
    use kube_scaffold_runtime::testing::mock::ApiServer;
    use serde_json::{Value, json};

    use super::*;
    use crate::api::example_com::v1alpha1::MemcachedSpec as Spec;

    /// The test object's UID, which its children's owner references name.
    const UID: &str = "9c8f3a52-0000-4000-8000-000000000001";

    /// Where the test object lives on the API server.
    fn path() -> String {
        format!("{}/test", Object::url_path(&(), Some("default")))
    }

    fn object() -> Object {
        let mut obj = Object::new("test", Spec::default());
        obj.meta_mut().namespace = Some("default".into());
        obj.meta_mut().uid = Some(UID.into());
        obj.meta_mut().generation = Some(1);
        obj
    }

    /// A fake API server holding `obj`, and a context that talks to it.
    fn serving(obj: &Object) -> (Arc<Context>, ApiServer) {
        let (ctx, server) = crate::controller::mocked();
        server.insert(&path(), obj);
        (ctx, server)
    }

    /// Reconciles `obj` once, against `ctx`'s API server; the reconcile must succeed.
    async fn reconciled(obj: Object, ctx: &Arc<Context>) -> Action {
        let result = reconcile(Arc::new(obj), ctx.clone()).await;
        result.expect("reconcile succeeded")
    }

    /// The `Available` condition of the object as the server holds it.
    fn available(server: &ApiServer) -> Value {
        let stored = server.get(&path()).expect("the object");
        let conditions = stored["status"]["conditions"].as_array().cloned();
        let conditions = conditions.expect("status conditions");
        let available = conditions.into_iter().find(|c| c["type"] == "Available");
        available.expect("an Available condition")
    }

    /// The Events the controller published.
    fn events(server: &ApiServer) -> Vec<Value> {
        let writes = server.writes().into_iter();
        let posts = writes.filter(|s| s.path.ends_with("/events"));
        posts.map(|s| s.body).collect()
    }

    #[tokio::test]
    async fn an_object_gets_its_status_applied() {
        let (ctx, server) = serving(&object());
        let metrics = ctx.metrics.clone();
        let action = observe(CONTROLLER, Arc::new(object()), ctx, reconcile).await;
        let action = action.expect("reconcile succeeded");
        assert_eq!(action, Action::await_change(), "resynced by the controller");

        let status_path = format!("{}/status", path());
        let writes = server.writes().into_iter();
        let mut patches = writes.filter(|s| s.path == status_path);
        let patch = patches.next().expect("a status patch");
        assert!(patches.next().is_none(), "one status patch");
        let manager = format!("fieldManager={FIELD_MANAGER}");
        assert!(patch.query.contains(&manager), "{}", patch.query);
        assert_eq!(patch.body["kind"], Object::kind(&()).as_ref());
        let stored = server.get(&path()).expect("the object");
        assert_eq!(stored["status"]["observedGeneration"], 1);
        assert_eq!(available(&server)["observedGeneration"], 1);
        let counted = format!("{{controller=\"{CONTROLLER}\",result=\"success\"}} 1");
        assert!(metrics.encode().contains(&counted), "{}", metrics.encode());
    }

    #[tokio::test]
    async fn an_object_being_deleted_gets_no_children() {
        let mut obj = object();
        obj.meta_mut().deletion_timestamp = Some(Time(Timestamp::now()));
        let (ctx, server) = serving(&obj);
        assert_eq!(reconciled(obj, &ctx).await, Action::await_change());

        let writes = server.writes();
        assert!(writes.is_empty(), "written while being deleted: {writes:?}");
    }

    /// Where the child `K` of the test object lives.
    fn child_path<K: Child<Object>>() -> String {
        format!("{}/test", K::url_path(&(), Some("default")))
    }

    /// Checks that the child `K` is applied, under a controller owner reference to the test
    /// object, with server-side apply as this controller's field manager.
    async fn referenced<K: Child<Object>>() {
        let (ctx, server) = serving(&object());
        reconciled(object(), &ctx).await;

        let child = server.get(&child_path::<K>());
        let child = child.expect("the child was applied");
        let owner = &child["metadata"]["ownerReferences"][0];
        assert_eq!(owner["uid"], UID);
        assert_eq!(owner["kind"], Object::kind(&()).as_ref());
        assert_eq!(owner["controller"], true);
        let writes = server.writes().into_iter();
        let mut applies = writes.filter(|s| s.path == child_path::<K>());
        let apply = applies.next().expect("an apply of the child");
        assert_eq!(apply.method, Method::PATCH);
        let manager = format!("fieldManager={FIELD_MANAGER}");
        assert!(apply.query.contains(&manager), "{}", apply.query);
        assert!(apply.query.contains("force=true"), "{}", apply.query);
    }

    /// Checks that an object of the child's name that another owner controls is left alone,
    /// and that the status and a Warning event say so.
    async fn foreign_kept<K: Child<Object>>() {
        let mut other = object();
        other.meta_mut().uid = Some("another-owner".into());
        let (ctx, server) = serving(&object());
        server.insert(&child_path::<K>(), &K::build(&other));
        let before = server.get(&child_path::<K>());
        reconciled(object(), &ctx).await;

        assert_eq!(server.get(&child_path::<K>()), before, "the child changed");
        let writes = server.writes();
        let applied = writes.iter().any(|s| s.path == child_path::<K>());
        assert!(!applied, "the child was written: {writes:?}");
        assert_eq!(available(&server)["status"], "False");
        assert_eq!(available(&server)["reason"], "ResourceExists");
        let events = events(&server);
        let warned = events.iter().any(|e| e["reason"] == "ResourceExists");
        assert!(warned, "no Warning event: {events:?}");
    }

    /// The `Deployment` a `Memcached` owns.
    mod deployment {
        use super::*;

        #[tokio::test]
        async fn is_applied_with_a_controller_reference() {
            referenced::<Deployment>().await;
        }

        #[tokio::test]
        async fn of_another_owner_is_left_alone() {
            foreign_kept::<Deployment>().await;
        }

        #[tokio::test]
        async fn runs_the_image_at_the_size() {
            let (ctx, server) = serving(&object());
            let mut obj = object();
            obj.spec.size = Some(3);
            reconciled(obj, &ctx).await;
            let child = server.get(&child_path::<Deployment>());
            let child = child.expect("the child");
            assert_eq!(child["spec"]["replicas"], 3);
            let pods = &child["spec"]["template"]["spec"];
            assert_eq!(pods["securityContext"]["runAsNonRoot"], true);
            let container = &pods["containers"][0];
            assert_eq!(container["image"], IMAGE);
            let command: Vec<&str> = COMMAND.split(',').collect();
            assert_eq!(container["command"], json!(command));
            assert_eq!(container["ports"][0]["containerPort"], PORT);
            assert_eq!(container["securityContext"]["runAsUser"], RUN_AS_USER);
        }

        #[tokio::test]
        async fn its_available_replicas_make_the_owner_available() {
            let (ctx, server) = serving(&object());
            reconciled(object(), &ctx).await;
            assert_eq!(available(&server)["status"], "False");
            let message = available(&server)["message"].to_string();
            let expected = "0 of 1 replicas are available";
            assert!(message.contains(expected), "{message}");

            let at = child_path::<Deployment>();
            let mut child = server.get(&at).expect("the child");
            child["status"] = json!({"replicas": 1, "availableReplicas": 1});
            server.insert(&at, &child);
            let stored = server.get(&path()).expect("the object");
            let obj: Object = serde_json::from_value(stored).expect("an object");
            reconciled(obj, &ctx).await;
            assert_eq!(available(&server)["status"], "True");
            let events = events(&server);
            let became = events.iter().any(|e| e["reason"] == "Available");
            assert!(became, "no Available event: {events:?}");
        }
    }
}
