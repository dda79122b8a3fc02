//! End-to-end test against a real cluster where the manager runs: `make test-e2e` creates a
//! kind cluster, builds and loads the image, deploys it, and runs this test in the kubeconfig
//! context `E2E_KUBE_CONTEXT` (your current context is left alone). It waits until the webhooks
//! (if any) have cert-manager's CA, checks that each validating webhook refuses its example
//! object, applies every sample in `config/samples`, waits until each is `Available`, reads it
//! back in every other version of its kind (through the conversion webhook, if the kind has
//! one), deletes it, and waits until it is gone.
//! `make test-e2e` then undeploys and uninstalls, each within a bound. `cargo test` skips it.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt as _;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use shop::{api, webhook};

const NAMESPACE: &str = "default";
const TIMEOUT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_secs(2);

#[tokio::test]
#[ignore = "needs a cluster where the manager runs: `make test-e2e`"]
async fn every_sample_becomes_available_and_is_cleaned_up() -> anyhow::Result<()> {
    let client = client().await?;
    webhooks_have_their_ca(&client).await?;
    validators_refuse_their_examples(&client).await?;
    let mut samples = 0;
    for entry in std::fs::read_dir("config/samples")? {
        let path = entry?.path();
        let is_sample = path.extension().is_some_and(|e| e == "yaml")
            && path.file_name().is_some_and(|n| n != "kustomization.yaml");
        if is_sample {
            check_sample(&client, &path).await?;
            samples += 1;
        }
    }
    anyhow::ensure!(samples > 0, "no sample in config/samples");
    Ok(())
}

async fn check_sample(client: &Client, path: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path)?;
    let sample: DynamicObject = serde_saphyr::from_str(&text)
        .with_context(|| format!("{} is not a Kubernetes object", path.display()))?;
    let types = sample
        .types
        .clone()
        .context("a sample without apiVersion and kind")?;
    let (group, version) = types
        .api_version
        .split_once('/')
        .context("a sample of a core type")?;
    let crds = api::crds()?;
    let crd = crds
        .iter()
        .find(|c| c.spec.group == group && c.spec.names.kind == types.kind)
        .with_context(|| format!("no CRD of this project serves {}", types.kind))?;
    let gvk = GroupVersionKind::gvk(group, version, &types.kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
    let objects: Api<DynamicObject> = if crd.spec.scope == "Namespaced" {
        Api::namespaced_with(client.clone(), NAMESPACE, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    };
    let name = sample
        .metadata
        .name
        .clone()
        .context("a sample without a name")?;
    let what = format!("{} {name}", types.kind);

    objects
        .patch(
            &name,
            &PatchParams::apply("e2e").force(),
            &Patch::Apply(&sample),
        )
        .await
        .with_context(|| format!("cannot apply {what}"))?;
    wait(&what, "to become Available", || async {
        let obj = objects.get(&name).await?;
        let conditions = obj.data["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        Ok(conditions
            .iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True"))
    })
    .await?;
    // The API server serves it in every version of the kind, converting between them.
    let others = crd.spec.versions.iter();
    for other in others.filter(|v| v.served && v.name != version) {
        let gvk = GroupVersionKind::gvk(group, &other.name, &types.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
        let as_other: Api<DynamicObject> = if crd.spec.scope == "Namespaced" {
            Api::namespaced_with(client.clone(), NAMESPACE, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        let read = as_other
            .get(&name)
            .await
            .with_context(|| format!("cannot read {what} as {}", other.name))?;
        let api_version = read.types.map(|t| t.api_version).unwrap_or_default();
        anyhow::ensure!(
            api_version == format!("{group}/{}", other.name),
            "{what} read as {} came back as `{api_version}`",
            other.name
        );
    }

    objects.delete(&name, &DeleteParams::default()).await?;
    wait(&what, "to be deleted", || async {
        Ok(objects.get_opt(&name).await?.is_none())
    })
    .await
}

/// Each validating webhook with an example it refuses (`refused()` in its module): created as
/// a dry run, the API server asks the webhook, which refuses it.
async fn validators_refuse_their_examples(client: &Client) -> anyhow::Result<()> {
    let crds = api::crds()?;
    for hook in webhook::hooks() {
        let Some(example) = &hook.refused else {
            continue;
        };
        let crd = crds
            .iter()
            .find(|c| c.spec.group == hook.group && c.spec.names.plural == hook.plural)
            .with_context(|| format!("no CRD of this project serves {}", hook.plural))?;
        let gvk = GroupVersionKind::gvk(&hook.group, &hook.version, &crd.spec.names.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, &hook.plural);
        let objects: Api<DynamicObject> = if crd.spec.scope == "Namespaced" {
            Api::namespaced_with(client.clone(), NAMESPACE, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        let object: DynamicObject = serde_json::from_value(example.clone())?;
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        match objects.create(&dry_run, &object).await {
            Err(kube::Error::Api(status)) if status.message.contains(&hook.name) => {}
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("{} did not refuse its example", hook.name));
            }
            Ok(_) => anyhow::bail!("{} let its example through", hook.name),
        }
    }
    Ok(())
}

/// Waits until cert-manager has injected its CA into every webhook configuration of the
/// project and every CRD it converts (none without webhooks): before that, the API server
/// cannot call the webhooks.
async fn webhooks_have_their_ca(client: &Client) -> anyhow::Result<()> {
    let prefix = "shop-";
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let ours: Vec<String> = api::crds()?
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect();
    wait("the webhook configurations", "to get their CA", || async {
        let mut bundles = Vec::new();
        for name in &ours {
            let crd = crds.get(name).await?;
            let conversion = crd.spec.conversion.and_then(|c| c.webhook);
            if let Some(webhook) = conversion {
                bundles.push(webhook.client_config.and_then(|c| c.ca_bundle));
            }
        }
        for configuration in mutating.list(&ListParams::default()).await? {
            if configuration.name_any().starts_with(prefix) {
                let hooks = configuration.webhooks.unwrap_or_default();
                bundles.extend(hooks.into_iter().map(|h| h.client_config.ca_bundle));
            }
        }
        for configuration in validating.list(&ListParams::default()).await? {
            if configuration.name_any().starts_with(prefix) {
                let hooks = configuration.webhooks.unwrap_or_default();
                bundles.extend(hooks.into_iter().map(|h| h.client_config.ca_bundle));
            }
        }
        let injected =
            |ca: &Option<k8s_openapi::ByteString>| ca.as_ref().is_some_and(|ca| !ca.0.is_empty());
        Ok(bundles.iter().all(injected))
    })
    .await
}

/// A client for the context `E2E_KUBE_CONTEXT` of the kubeconfig, or its current context.
async fn client() -> anyhow::Result<Client> {
    let options = KubeConfigOptions {
        context: std::env::var("E2E_KUBE_CONTEXT").ok(),
        ..KubeConfigOptions::default()
    };
    let kubeconfig = Kubeconfig::read().context("cannot read the kubeconfig")?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .with_context(|| format!("no context {:?} in the kubeconfig", options.context))?;
    Ok(Client::try_from(config)?)
}

/// Polls `done` until it says yes, or fails after `TIMEOUT`.
async fn wait<F, Fut>(what: &str, until: &str, mut done: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while !done().await? {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "waited {TIMEOUT:?} for {what} {until}"
        );
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}
