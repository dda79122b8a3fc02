//! Webhooks under `make run` (`--webhook-local-url https://<host>:<port>`): the manager on
//! your machine makes a certificate for that host, serves its webhooks with it, and registers
//! configurations that send the cluster's reviews there: `shop-local-...`, with
//! the URL and the CA. They fail open (`failurePolicy: Ignore`, a 5 s timeout), so that a
//! manager that stopped or crashed cannot block the cluster, and the manager deletes them when
//! it stops. A kind with conversions has its CRD's conversion webhook pointed at the URL too
//! (a CRD has one), and put back as it was when the manager stops; after a crash, `make run`
//! again and stop it.

use std::path::Path;

use anyhow::Context as _;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt as _};

use super::certs::{Certs, ca_name};
use super::conversion::{self, Conversion};
use super::{Configuration, Hook};

/// How long the API server waits for a local hook before it lets the request through.
const TIMEOUT_SECONDS: i32 = 5;

/// What the API server does when a registered hook does not answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Let the request through: a manager on your machine that stopped or crashed cannot
    /// block the cluster (`make run`).
    Ignore,
    /// Refuse the request: a test that a hook answered (`make test-integration`).
    Fail,
}

/// The prefix of what a local manager of `project` registers: `<project>-local-`.
fn prefix(project: &str) -> String {
    format!("{project}-local-")
}

/// The configurations registered for a local manager.
pub struct Registered {
    client: Client,
    mutating: Option<String>,
    validating: Option<String>,
    /// The CRDs whose conversion points here, with the conversion each had before.
    crds: Vec<(String, Option<apiextensions::CustomResourceConversion>)>,
}

/// Makes a certificate for `url`'s host into `cert_dir`, registers `hooks` of `project` at
/// `url` and points the CRDs of `conversions` at it.
pub async fn register(
    client: &Client,
    project: &str,
    url: &str,
    hooks: &[Hook],
    conversions: &[Conversion],
    cert_dir: &Path,
    failure: FailurePolicy,
) -> anyhow::Result<Registered> {
    let host = host(url).with_context(|| {
        format!("--webhook-local-url {url}: not https://<host>[:<port>], the address the cluster's API server reaches this machine at")
    })?;
    let certs = Certs::new(&[host], &ca_name(project))?;
    certs.write(cert_dir)?;
    let ca = Some(ByteString(certs.ca_cert.into_bytes()));
    let (mutating, validating) = super::configurations(hooks);
    let client = client.clone();
    let mut crds = Vec::new();
    for name in conversion::crd_names(conversions) {
        let previous = convert_at(&client, &name, url, &ca, conversions).await?;
        crds.push((name, previous));
    }
    Ok(Registered {
        crds,
        mutating: match mutating {
            Some(configuration) => {
                Some(apply(&client, project, configuration, url, &ca, failure).await?)
            }
            None => None,
        },
        validating: match validating {
            Some(configuration) => {
                Some(apply(&client, project, configuration, url, &ca, failure).await?)
            }
            None => None,
        },
        client,
    })
}

/// Registers `configuration` as `<project>-local-<its name>`, its webhooks at `url`, trusting
/// `ca`; its name.
async fn apply<C: Configuration>(
    client: &Client,
    project: &str,
    mut configuration: C,
    url: &str,
    ca: &Option<ByteString>,
    failure: FailurePolicy,
) -> anyhow::Result<String> {
    let prefix = prefix(project);
    let name = format!("{prefix}{}", configuration.name_any());
    configuration.meta_mut().name = Some(name.clone());
    for hook in configuration.webhooks_mut() {
        let path = path(hook.client_config);
        hook.client_config.url = Some(format!("{url}{path}"));
        hook.client_config.service = None;
        hook.client_config.ca_bundle = ca.clone();
        *hook.failure_policy = Some(format!("{failure:?}"));
        *hook.timeout_seconds = Some(TIMEOUT_SECONDS);
    }
    let params = PatchParams::apply(prefix.trim_end_matches('-')).force();
    let api: Api<C> = Api::all(client.clone());
    api.patch(&name, &params, &Patch::Apply(with_types(configuration)))
        .await
        .with_context(|| format!("cannot register {name}"))?;
    Ok(name)
}

/// Points the conversion webhook of the CRD `name` at `url`, trusting `ca`; the conversion it
/// had (the one `make manifests` writes, if it already pointed at `url`: a manager that
/// crashed).
async fn convert_at(
    client: &Client,
    name: &str,
    url: &str,
    ca: &Option<ByteString>,
    conversions: &[Conversion],
) -> anyhow::Result<Option<apiextensions::CustomResourceConversion>> {
    let api: Api<apiextensions::CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = api
        .get(name)
        .await
        .with_context(|| format!("cannot read the CRD {name}: run `make install` first"))?;
    let url = format!("{url}{}", conversion::PATH);
    let previous = match crd.spec.conversion.take() {
        Some(taken) if converts_at(&taken) == Some(url.as_str()) => {
            conversion::by_webhook(std::slice::from_mut(&mut crd), conversions);
            crd.spec.conversion.take()
        }
        other => other,
    };
    crd.spec.conversion = Some(apiextensions::CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(apiextensions::WebhookConversion {
            client_config: Some(apiextensions::WebhookClientConfig {
                url: Some(url),
                ca_bundle: ca.clone(),
                service: None,
            }),
            conversion_review_versions: vec!["v1".into()],
        }),
    });
    api.replace(name, &PostParams::default(), &crd)
        .await
        .with_context(|| format!("cannot point the conversion of {name} at this manager"))?;
    Ok(previous)
}

/// The URL a CRD's conversion webhook is called at, if it has one.
fn converts_at(conversion: &apiextensions::CustomResourceConversion) -> Option<&str> {
    let webhook = conversion.webhook.as_ref()?;
    webhook.client_config.as_ref()?.url.as_deref()
}

/// Puts `previous` back as the conversion of the CRD `name`; a failure is logged, since the
/// manager is stopping.
async fn restore(
    client: &Client,
    name: &str,
    previous: Option<apiextensions::CustomResourceConversion>,
) {
    let api: Api<apiextensions::CustomResourceDefinition> = Api::all(client.clone());
    let restored = async {
        let mut crd = api.get(name).await?;
        crd.spec.conversion = previous;
        api.replace(name, &PostParams::default(), &crd).await
    };
    if let Err(err) = restored.await {
        tracing::warn!(error = %err, %name, "the CRD's conversion not put back: run `make run` again and stop it");
    }
}

impl Registered {
    /// Deletes the configurations and puts the CRDs' conversions back: the cluster no longer
    /// calls this machine.
    pub async fn unregister(self) {
        for (name, previous) in self.crds {
            restore(&self.client, &name, previous).await;
        }
        if let Some(name) = &self.mutating {
            delete::<MutatingWebhookConfiguration>(&self.client, name).await;
        }
        if let Some(name) = &self.validating {
            delete::<ValidatingWebhookConfiguration>(&self.client, name).await;
        }
    }
}

/// Deletes the configuration `name`; a failure is logged, since the manager is stopping.
async fn delete<C: Configuration>(client: &Client, name: &str) {
    let api: Api<C> = Api::all(client.clone());
    if let Err(err) = api.delete(name, &DeleteParams::default()).await {
        tracing::warn!(error = %err, %name, "local webhooks not unregistered");
    }
}

/// The host of `https://<host>[:<port>][/...]`, without an IPv6 address's brackets.
fn host(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split('/').next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_string())
}

/// The path a hook is served at, from its Service reference.
fn path(config: &WebhookClientConfig) -> String {
    let service = config.service.as_ref();
    service.and_then(|s| s.path.clone()).unwrap_or_default()
}

/// A configuration as server-side apply wants it: with its apiVersion and kind.
fn with_types<C: Configuration>(object: C) -> serde_json::Value {
    let mut value = serde_json::to_value(object).expect("a configuration serializes");
    value["apiVersion"] = <C as k8s_openapi::Resource>::API_VERSION.into();
    value["kind"] = <C as k8s_openapi::Resource>::KIND.into();
    value
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::super::Validator;
    use super::super::fake::{Objects, handshake};
    use super::*;

    fn label(cm: &mut ConfigMap) {
        cm.metadata.labels.get_or_insert_default();
    }

    #[test]
    fn the_host_is_read_from_the_url() {
        assert_eq!(
            host("https://172.18.0.1:9443").as_deref(),
            Some("172.18.0.1")
        );
        assert_eq!(
            host("https://host.docker.internal").as_deref(),
            Some("host.docker.internal")
        );
        assert_eq!(host("https://[fd00::1]:9443/x").as_deref(), Some("fd00::1"));
        assert_eq!(host("http://172.18.0.1:9443"), None);
        assert_eq!(host("https://:9443"), None);
    }

    #[tokio::test]
    async fn a_local_manager_registers_hooks_that_fail_open_and_removes_them() {
        let objects = Objects::default();
        let dir = std::env::temp_dir().join(format!("local-{}", std::process::id()));
        let allow = |_: &ConfigMap| Ok(vec![]);
        let validator = Validator {
            create: allow,
            update: |_, _| Ok(vec![]),
            delete: allow,
        };
        let hooks = vec![
            Hook::defaulting::<ConfigMap>(label),
            Hook::validating(validator),
        ];
        let url = "https://172.18.0.1:9443";
        let ignore = FailurePolicy::Ignore;
        let registered = register(
            &objects.client(),
            "guestbook",
            url,
            &hooks,
            &[],
            &dir,
            ignore,
        )
        .await
        .unwrap();
        let path = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/guestbook-local-mutating-webhook-configuration".to_string();
        let configuration = objects.get(&path).expect("a configuration");
        let hook = &configuration["webhooks"][0];
        assert_eq!(
            hook["clientConfig"]["url"],
            "https://172.18.0.1:9443/mutate--v1-configmap"
        );
        assert_eq!(hook["clientConfig"]["service"], serde_json::Value::Null);
        assert_eq!(hook["failurePolicy"], "Ignore");
        assert_eq!(hook["timeoutSeconds"], TIMEOUT_SECONDS);
        // The certificate written is trusted through the CA registered, for the URL's host.
        let ca: ByteString =
            serde_json::from_value(hook["clientConfig"]["caBundle"].clone()).unwrap();
        let ca = String::from_utf8(ca.0).unwrap();
        let tls_cert = std::fs::read_to_string(dir.join("tls.crt")).unwrap();
        let tls_key = std::fs::read_to_string(dir.join("tls.key")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        handshake(&tls_cert, &tls_key, &ca, "172.18.0.1")
            .await
            .unwrap();
        // The validating hook alike.
        let validating = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/guestbook-local-validating-webhook-configuration".to_string();
        let configuration = objects.get(&validating).expect("a configuration");
        let hook = &configuration["webhooks"][0];
        assert_eq!(
            hook["clientConfig"]["url"],
            "https://172.18.0.1:9443/validate--v1-configmap"
        );
        assert_eq!(hook["failurePolicy"], "Ignore");
        let mutating = objects.get(&path).unwrap();
        let ca = &mutating["webhooks"][0]["clientConfig"]["caBundle"];
        assert_eq!(&hook["clientConfig"]["caBundle"], ca);
        registered.unregister().await;
        assert_eq!(objects.get(&path), None);
        assert_eq!(objects.get(&validating), None);
    }
}
