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

//! What the end-to-end and the integration tests share: the samples of `config/samples`
//! applied, read back in every version of their kind and deleted; each validating webhook's
//! example refused; waiting with a bound.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};

use guestbook::{api, manifests};

/// Where samples are created.
pub const NAMESPACE: &str = "default";
const POLL: Duration = Duration::from_secs(1);

/// The sample files of `config/samples`.
pub fn samples() -> anyhow::Result<Vec<PathBuf>> {
    let mut samples = Vec::new();
    for entry in std::fs::read_dir("config/samples")? {
        let path = entry?.path();
        let is_sample = path.extension().is_some_and(|e| e == "yaml")
            && path.file_name().is_some_and(|n| n != "kustomization.yaml");
        if is_sample {
            samples.push(path);
        }
    }
    samples.sort();
    Ok(samples)
}

/// A sample, and the API of its kind in the sample's version.
pub struct Sample {
    /// `<Kind> <name>`, for messages.
    pub what: String,
    name: String,
    object: DynamicObject,
    objects: Api<DynamicObject>,
    crd: CustomResourceDefinition,
    version: String,
    client: Client,
}

impl Sample {
    /// Reads the sample at `path`, of one of the project's kinds.
    pub fn read(client: &Client, path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)?;
        let object: DynamicObject = serde_saphyr::from_str(&text)
            .with_context(|| format!("{} is not a Kubernetes object", path.display()))?;
        let types = object
            .types
            .clone()
            .context("a sample without apiVersion and kind")?;
        let (group, version) = types
            .api_version
            .split_once('/')
            .context("a sample of a core type")?;
        let crd = api::crds()?
            .into_iter()
            .find(|c| c.spec.group == group && c.spec.names.kind == types.kind)
            .with_context(|| format!("no CRD of this project serves {}", types.kind))?;
        let name = object
            .metadata
            .name
            .clone()
            .context("a sample without a name")?;
        Ok(Self {
            what: format!("{} {name}", types.kind),
            objects: api_of(client, &crd, version),
            version: version.to_string(),
            name,
            object,
            crd,
            client: client.clone(),
        })
    }

    /// Applies the sample (server-side, as `field_manager`).
    pub async fn apply(&self, field_manager: &str) -> anyhow::Result<()> {
        let params = PatchParams::apply(field_manager).force();
        self.objects
            .patch(&self.name, &params, &Patch::Apply(&self.object))
            .await
            .with_context(|| format!("cannot apply {}", self.what))?;
        Ok(())
    }

    /// The object as the API server holds it.
    pub async fn get(&self) -> anyhow::Result<DynamicObject> {
        Ok(self.objects.get(&self.name).await?)
    }

    /// Reads the object in every other version of its kind: the API server converts it.
    pub async fn read_in_every_version(&self) -> anyhow::Result<()> {
        let group = &self.crd.spec.group;
        let versions = self.crd.spec.versions.iter();
        for other in versions.filter(|v| v.served && v.name != self.version) {
            let read = api_of(&self.client, &self.crd, &other.name)
                .get(&self.name)
                .await
                .with_context(|| format!("cannot read {} as {}", self.what, other.name))?;
            let api_version = read.types.map(|t| t.api_version).unwrap_or_default();
            anyhow::ensure!(
                api_version == format!("{group}/{}", other.name),
                "{} read as {} came back as `{api_version}`",
                self.what,
                other.name
            );
        }
        Ok(())
    }

    /// Deletes the object and waits until it is gone (its finalizers removed).
    pub async fn delete(&self, timeout: Duration) -> anyhow::Result<()> {
        self.objects
            .delete(&self.name, &DeleteParams::default())
            .await?;
        wait(&self.what, "to be deleted", timeout, || async {
            Ok(self.objects.get_opt(&self.name).await?.is_none())
        })
        .await
    }
}

/// The conditions of `object`'s status.
pub fn conditions(object: &DynamicObject) -> Vec<serde_json::Value> {
    let conditions = object.data["status"]["conditions"].as_array();
    conditions.cloned().unwrap_or_default()
}

/// The API of `crd`'s kind in `version`, in `NAMESPACE` if it is namespaced.
fn api_of(client: &Client, crd: &CustomResourceDefinition, version: &str) -> Api<DynamicObject> {
    let (group, kind) = (&crd.spec.group, &crd.spec.names.kind);
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
    if crd.spec.scope == "Namespaced" {
        Api::namespaced_with(client.clone(), NAMESPACE, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    }
}

/// Each validating webhook with an example it refuses (`refused()` in its module): created as
/// a dry run, the API server asks the webhook, which refuses it.
pub async fn validators_refuse_their_examples(client: &Client) -> anyhow::Result<()> {
    let manifests = manifests()?;
    let crds = manifests.crds();
    for hook in manifests.hooks() {
        let Some(example) = &hook.refused else {
            continue;
        };
        let crd = crds
            .iter()
            .find(|c| c.spec.group == hook.group && c.spec.names.plural == hook.plural)
            .with_context(|| format!("no CRD of this project serves {}", hook.plural))?;
        let objects = api_of(client, crd, &hook.version);
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

/// Polls `done` until it says yes, or fails after `timeout`.
pub async fn wait<F, Fut>(
    what: &str,
    until: &str,
    timeout: Duration,
    mut done: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    while !done().await? {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "waited {timeout:?} for {what} {until}"
        );
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}
