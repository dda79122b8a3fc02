// Copyright 2026 The Guestbook Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! Integration test against a real API server, as kubebuilder's envtest suite:
//! `make test-integration` runs it with etcd and kube-apiserver from `KUBEBUILDER_ASSETS`
//! (`cargo test` skips it). The project's CRDs are installed from the code (and those of other
//! projects' kinds from `hack/crds`), its webhooks served by this process and registered at its
//! address (a hook that does not answer fails the request), its manager runs in this
//! process. Each validating webhook must refuse its example; every sample in
//! `config/samples` must be reconciled (its `Available` condition reported for its
//! generation: `True`, or `False` while it waits for pods, which never run here), read back in
//! every version of its kind, and deleted.

mod support;

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube_scaffold_runtime::envtest::Environment;
use kube_scaffold_runtime::manager::Options;

use guestbook::{manager, manifests};

use support::{Sample, conditions, wait};

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test]
#[ignore = "needs etcd and kube-apiserver: `make test-integration`"]
async fn every_sample_is_reconciled_and_every_webhook_answers() -> anyhow::Result<()> {
    let env = Environment::start().await?;
    let client = env.client.clone();
    install_crds(&client).await?;
    let running = env.run(manager(Options::default())).await?;
    let outcome = check(&client).await;
    let stopped = running.stop().await;
    outcome?;
    stopped
}

/// The webhooks' examples refused, every sample reconciled, converted and deleted.
async fn check(client: &Client) -> anyhow::Result<()> {
    support::validators_refuse_their_examples(client).await?;
    for path in support::samples()? {
        let sample = Sample::read(client, &path)?;
        sample.apply("integration-test").await?;
        wait(&sample.what, "to be reconciled", TIMEOUT, || async {
            let object = sample.get().await?;
            let conditions = conditions(&object);
            let generation = serde_json::Value::from(object.metadata.generation);
            let reported = |type_: &str, status: &str| {
                conditions.iter().any(|c| {
                    c["type"] == type_
                        && c["status"] == status
                        && c["observedGeneration"] == generation
                })
            };
            Ok(reported("Available", "True")
                || (reported("Available", "False") && reported("Progressing", "True")))
        })
        .await?;
        sample.read_in_every_version().await?;
        sample.delete(TIMEOUT).await?;
    }
    Ok(())
}

/// Installs the project's CRDs, as `make manifests` writes them, and those of other projects'
/// kinds its controllers watch (`hack/crds`); waits until the API server serves them.
async fn install_crds(client: &Client) -> anyhow::Result<()> {
    let mut crds = manifests()?.crds();
    let others = Path::new("hack/crds");
    if others.is_dir() {
        for entry in std::fs::read_dir(others)? {
            let path = entry?.path();
            let text = std::fs::read_to_string(&path)?;
            let crd: CustomResourceDefinition = serde_saphyr::from_str(&text)
                .with_context(|| format!("{} is not a CRD", path.display()))?;
            // An adopted kind's CRD is there too: the project's own stands.
            if !crds.iter().any(|c| c.metadata.name == crd.metadata.name) {
                crds.push(crd);
            }
        }
    }
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("integration-test").force();
    for crd in &crds {
        let name = crd.metadata.name.clone().context("a CRD without a name")?;
        api.patch(&name, &params, &Patch::Apply(crd))
            .await
            .with_context(|| format!("cannot install {name}"))?;
        wait(&name, "to be established", TIMEOUT, || async {
            let status = api.get(&name).await?.status.unwrap_or_default();
            let conditions = status.conditions.unwrap_or_default();
            Ok(conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True"))
        })
        .await?;
    }
    Ok(())
}
