//! End-to-end test against a real cluster where the manager runs: `make test-e2e` builds the
//! image, brings it to the cluster (a kind cluster of its own, or any cluster you name with
//! `E2E_CONTEXT`), deploys it, and runs this test in the kubeconfig context `E2E_KUBE_CONTEXT`
//! (your current context is left alone). It waits until the webhooks
//! (if any) have cert-manager's CA, checks that each validating webhook refuses its example
//! object, applies every sample in `config/samples`, waits until each is `Available`, reads it
//! back in every other version of its kind (through the conversion webhook, if the kind has
//! one), deletes it, and waits until it is gone.
//! `make test-e2e` then undeploys and uninstalls, each within a bound. `cargo test` skips it.

mod support;

use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt as _;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use shop::api;

use support::{Sample, conditions, wait};

const TIMEOUT: Duration = Duration::from_secs(120);

#[tokio::test]
#[ignore = "needs a cluster where the manager runs: `make test-e2e`"]
async fn every_sample_becomes_available_and_is_cleaned_up() -> anyhow::Result<()> {
    let client = client().await?;
    webhooks_have_their_ca(&client).await?;
    support::validators_refuse_their_examples(&client).await?;
    let samples = support::samples()?;
    anyhow::ensure!(!samples.is_empty(), "no sample in config/samples");
    for path in samples {
        let sample = Sample::read(&client, &path)?;
        sample.apply("e2e").await?;
        wait(&sample.what, "to become Available", TIMEOUT, || async {
            let conditions = conditions(&sample.get().await?);
            Ok(conditions
                .iter()
                .any(|c| c["type"] == "Available" && c["status"] == "True"))
        })
        .await?;
        sample.read_in_every_version().await?;
        sample.delete(TIMEOUT).await?;
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
    wait("the webhooks", "to get their CA", TIMEOUT, || async {
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
