//! Certificates without cert-manager (`--webhook-cert-secret`): the manager makes a CA and a
//! serving certificate for its webhook Service, keeps them in a Secret that every replica
//! shares (the first to start creates it; the others read it), writes the serving pair where
//! the webhook server reads it, injects the CA into its webhook configurations and the CRDs it
//! converts, and renews the serving certificate a month before it expires.
//!
//! The CA lives ten years and signs every renewal, so the CA bundle the API server trusts does
//! not change while replicas pick up a renewed certificate. Delete the Secret to start over.
//! Every replica watches the Secret, the configurations and the CRDs: a CA bundle someone
//! removed (a GitOps tool applying the manifests as written) is back within seconds.

use std::fmt::Debug;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use futures::stream::{self, BoxStream, StreamExt as _};
use futures::{FutureExt as _, future};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher;
use kube::{Client, Resource};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;
use x509_parser::extensions::GeneralName;

use super::Configuration;

/// How long the CA and a serving certificate are valid.
const CA_LIFETIME: time::Duration = time::Duration::days(3650);
const SERVING_LIFETIME: time::Duration = time::Duration::days(365);
/// A serving certificate closer than this to its end is renewed.
const RENEW_BEFORE: time::Duration = time::Duration::days(30);
/// How often every replica reads the Secret again and checks the CA bundles, changed or not:
/// a renewal falls due without any object changing.
const CHECK_EVERY: Duration = Duration::from_secs(600);
/// How long a change waits for the changes that come with it (its own writes among them), so
/// that a burst is checked once.
const SETTLE: Duration = Duration::from_secs(1);
/// How many times a CA injection reads and writes an object again when another writer came
/// first (409), as client-go's `retry.RetryOnConflict` (its `DefaultRetry` has 5 steps).
const CONFLICT_ATTEMPTS: usize = 5;

/// What the manager provides certificates for.
#[derive(Clone, Debug)]
pub struct SelfSigned {
    /// The Secret, in `namespace`.
    pub secret: String,
    pub namespace: String,
    /// The webhook Service, in `namespace`: the serving certificate's DNS names.
    pub service: String,
    /// The webhook configurations and CRDs whose CA bundle is the CA.
    pub mutating: Option<String>,
    pub validating: Option<String>,
    pub crds: Vec<String>,
    /// The CA's name: `<project> webhook CA`.
    pub ca: String,
}

impl SelfSigned {
    /// The certificates of the project `project` whose webhooks are `hooks` and
    /// `conversions`, in the Secret `secret` of `namespace`, for the Service `service`. Its
    /// configurations are named after the Service, as config/default names them
    /// (`<prefix>webhook-service`, `<prefix>mutating-webhook-configuration`...).
    pub fn for_project(
        project: &str,
        secret: &str,
        namespace: &str,
        service: &str,
        hooks: &[super::Hook],
        conversions: &[super::conversion::Conversion],
    ) -> Self {
        let prefix = service.strip_suffix("webhook-service").unwrap_or_default();
        let configuration = |mutating: bool, name: &str| {
            hooks
                .iter()
                .any(|h| h.mutating == mutating)
                .then(|| format!("{prefix}{name}"))
        };
        let crds = super::conversion::crd_names(conversions);
        Self {
            secret: secret.into(),
            namespace: namespace.into(),
            service: service.into(),
            mutating: configuration(true, "mutating-webhook-configuration"),
            validating: configuration(false, "validating-webhook-configuration"),
            crds,
            ca: ca_name(project),
        }
    }

    /// Makes sure the Secret holds a CA and a serving certificate valid for a month at least,
    /// writes the serving pair into `cert_dir` and the CA into the configurations and CRDs.
    pub async fn provide(&self, client: &Client, cert_dir: &Path) -> anyhow::Result<()> {
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &self.namespace);
        let what = || format!("the Secret {}/{}", self.namespace, self.secret);
        let names = self.dns_names();
        let certs = loop {
            let existing = secrets.get_opt(&self.secret).await.with_context(what)?;
            let (certs, created) = match &existing {
                None => (Certs::new(&names, &self.ca)?, true),
                Some(secret) => match Certs::from_secret(secret) {
                    Ok(certs) if !certs.needs_renewal(&names, OffsetDateTime::now_utc()) => {
                        break certs;
                    }
                    Ok(certs) => (certs.renew(&names, &self.ca)?, false),
                    // Not one this manager wrote (cert-manager's, left after switching modes):
                    // a new CA replaces it, rather than an exit at every start.
                    Err(err) => {
                        let error = format!("{err:#}");
                        tracing::warn!(%error, secret = %self.secret, "replacing a webhook Secret this manager did not write");
                        (Certs::new(&names, &self.ca)?, false)
                    }
                },
            };
            let mut secret = certs.to_secret(&self.secret);
            let written = match (created, existing) {
                (true, _) => secrets.create(&PostParams::default(), &secret).await,
                (false, existing) => {
                    secret.metadata.resource_version =
                        existing.and_then(|s| s.metadata.resource_version);
                    let params = PostParams::default();
                    secrets.replace(&self.secret, &params, &secret).await
                }
            };
            match written {
                Ok(_) => {
                    tracing::info!(secret = %self.secret, "webhook certificate written");
                    break certs;
                }
                // Another replica wrote it first: use theirs.
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(err) => return Err(err).with_context(what),
            }
        };
        certs.write(cert_dir)?;
        self.inject(client, certs.ca_cert.as_bytes()).await
    }

    /// Provides the certificates again whenever the Secret, a configuration or a CRD changes,
    /// and every ten minutes, until `shutdown`: renewals (by this replica or another) reach
    /// the webhook server, and a CA bundle someone removed comes back.
    pub async fn keep(
        self,
        client: Client,
        cert_dir: std::path::PathBuf,
        shutdown: CancellationToken,
    ) {
        let mut changes = self.changes(&client);
        loop {
            tokio::select! {
                () = tokio::time::sleep(CHECK_EVERY) => {}
                Some(()) = changes.next() => {
                    tokio::time::sleep(SETTLE).await;
                    while let Some(Some(())) = changes.next().now_or_never() {}
                }
                () = shutdown.cancelled() => return,
            }
            if let Err(err) = self.provide(&client, &cert_dir).await {
                tracing::warn!(
                    error = format!("{err:#}"),
                    "webhook certificate not refreshed"
                );
            }
        }
    }

    /// A unit for each change of the Secret, a configuration or a CRD, after the watches'
    /// first lists (what `provide` already saw).
    fn changes(&self, client: &Client) -> BoxStream<'static, ()> {
        let secrets = Api::<Secret>::namespaced(client.clone(), &self.namespace);
        let mut watches = vec![named(secrets, &self.secret)];
        if let Some(name) = &self.mutating {
            let api = Api::<MutatingWebhookConfiguration>::all(client.clone());
            watches.push(named(api, name));
        }
        if let Some(name) = &self.validating {
            let api = Api::<ValidatingWebhookConfiguration>::all(client.clone());
            watches.push(named(api, name));
        }
        for name in &self.crds {
            let api = Api::<CustomResourceDefinition>::all(client.clone());
            watches.push(named(api, name));
        }
        stream::select_all(watches).boxed()
    }

    /// The Service's names inside the cluster.
    fn dns_names(&self) -> Vec<String> {
        let service = format!("{}.{}.svc", self.service, self.namespace);
        vec![service.clone(), format!("{service}.cluster.local")]
    }

    /// Sets `ca` as the CA bundle of every webhook of the configurations and of the CRDs'
    /// conversion webhooks, where it is not already.
    async fn inject(&self, client: &Client, ca: &[u8]) -> anyhow::Result<()> {
        let bundle = Some(ByteString(ca.to_vec()));
        if let Some(name) = &self.mutating {
            inject_into::<MutatingWebhookConfiguration>(client, name, &bundle).await?;
        }
        if let Some(name) = &self.validating {
            inject_into::<ValidatingWebhookConfiguration>(client, name, &bundle).await?;
        }
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for name in &self.crds {
            update(&crds, name, |crd| {
                let webhook = crd
                    .spec
                    .conversion
                    .as_mut()
                    .and_then(|c| c.webhook.as_mut());
                let config = webhook.and_then(|w| w.client_config.as_mut());
                let configs: Vec<_> = config.into_iter().map(|c| &mut c.ca_bundle).collect();
                set_all(configs, &bundle)
            })
            .await?;
        }
        Ok(())
    }
}

/// A unit for each change of the object `name` (watched alone: RBAC can name it), after the
/// first list; a failed watch is logged and retried with backoff.
fn named<K>(api: Api<K>, name: &str) -> BoxStream<'static, ()>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let name = name.to_string();
    let events = watcher::watcher(api, config).default_backoff();
    let changes = events.filter_map(move |event| {
        future::ready(match event {
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) => Some(()),
            Ok(_) => None,
            Err(err) => {
                tracing::warn!(error = %err, %name, "webhook certificates: watch failed");
                None
            }
        })
    });
    changes.boxed()
}

/// Sets `bundle` as the CA bundle of every webhook of the configuration `name`, where it is
/// not already.
async fn inject_into<C: Configuration>(
    client: &Client,
    name: &str,
    bundle: &Option<ByteString>,
) -> anyhow::Result<()> {
    let api: Api<C> = Api::all(client.clone());
    update(&api, name, |configuration| {
        let hooks = configuration.webhooks_mut();
        let bundles = hooks.into_iter().map(|h| &mut h.client_config.ca_bundle);
        set_all(bundles.collect(), bundle)
    })
    .await
}

/// Reads the object `name`, lets `change` change it, and writes it back if `change` says it
/// did; read and changed again when another writer came first (409: replicas that start
/// together inject the same CA at once).
async fn update<K>(api: &Api<K>, name: &str, change: impl Fn(&mut K) -> bool) -> anyhow::Result<()>
where
    K: Resource + Clone + DeserializeOwned + serde::Serialize + Debug,
{
    for _ in 0..CONFLICT_ATTEMPTS {
        let mut object = api
            .get(name)
            .await
            .with_context(|| format!("cannot read {name}"))?;
        if !change(&mut object) {
            return Ok(());
        }
        match api.replace(name, &PostParams::default(), &object).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(err) => return Err(err).with_context(|| format!("cannot write {name}")),
        }
    }
    anyhow::bail!(
        "cannot write {name}: {CONFLICT_ATTEMPTS} writes in a row met another writer's (409)"
    )
}

/// Sets every one of `bundles` to `bundle`; whether one changed.
fn set_all(bundles: Vec<&mut Option<ByteString>>, bundle: &Option<ByteString>) -> bool {
    let mut changed = false;
    for current in bundles {
        if current != bundle {
            *current = bundle.clone();
            changed = true;
        }
    }
    changed
}

/// A CA and a serving certificate it signed, as PEM.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Certs {
    pub(super) ca_cert: String,
    ca_key: String,
    pub(super) tls_cert: String,
    pub(super) tls_key: String,
    not_after: OffsetDateTime,
    dns_names: Vec<String>,
}

impl Certs {
    /// A new CA named `ca`, and a serving certificate for `names` it signed.
    pub(super) fn new(names: &[String], ca: &str) -> anyhow::Result<Self> {
        let ca_key = KeyPair::generate()?;
        let now = OffsetDateTime::now_utc();
        let ca_cert = ca_params(ca, now)?.self_signed(&ca_key)?;
        Self::signed(ca_cert.pem(), ca_key, ca, names, now + SERVING_LIFETIME)
    }

    /// The same CA, named `ca`, and a new serving certificate for `names` it signed.
    fn renew(&self, names: &[String], ca: &str) -> anyhow::Result<Self> {
        Self::signed(
            self.ca_cert.clone(),
            KeyPair::from_pem(&self.ca_key)?,
            ca,
            names,
            OffsetDateTime::now_utc() + SERVING_LIFETIME,
        )
    }

    /// A serving certificate for `names` until `not_after`, signed by the CA named `ca`.
    fn signed(
        ca_cert: String,
        ca_key: KeyPair,
        ca: &str,
        names: &[String],
        not_after: OffsetDateTime,
    ) -> anyhow::Result<Self> {
        let ca_key_pem = ca_key.serialize_pem();
        // The CA's name and key: all a signature needs.
        let issuer = Issuer::new(ca_params(ca, OffsetDateTime::now_utc())?, ca_key);
        let now = OffsetDateTime::now_utc();
        let mut params = CertificateParams::new(names.to_vec())?;
        params.not_before = now - time::Duration::hours(1);
        params.not_after = not_after;
        params
            .distinguished_name
            .push(DnType::CommonName, names[0].clone());
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Self {
            ca_cert,
            ca_key: ca_key_pem,
            tls_cert: cert.pem(),
            tls_key: key.serialize_pem(),
            not_after: strip_nanos(params.not_after),
            dns_names: names.to_vec(),
        })
    }

    /// Whether the serving certificate is for other names, or ends within a month of `now`.
    fn needs_renewal(&self, names: &[String], now: OffsetDateTime) -> bool {
        self.dns_names != names || self.not_after - now < RENEW_BEFORE
    }

    fn to_secret(&self, name: &str) -> Secret {
        let data = [
            ("ca.crt", &self.ca_cert),
            ("ca.key", &self.ca_key),
            ("tls.crt", &self.tls_cert),
            ("tls.key", &self.tls_key),
        ];
        Secret {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            data: Some(
                data.map(|(k, v)| (k.into(), ByteString(v.as_bytes().to_vec())))
                    .into(),
            ),
            type_: Some("kubernetes.io/tls".into()),
            ..Secret::default()
        }
    }

    /// The certificates a Secret holds; the serving certificate's end and names are read
    /// from the certificate itself. An error for a Secret this manager did not write (no CA
    /// key, or not PEM).
    fn from_secret(secret: &Secret) -> anyhow::Result<Self> {
        let data = secret.data.clone().unwrap_or_default();
        let text = |key: &str| -> anyhow::Result<String> {
            let bytes = data.get(key).with_context(|| format!("no `{key}`"))?;
            Ok(String::from_utf8(bytes.0.clone())?)
        };
        let tls_cert = text("tls.crt")?;
        let (_, pem) = x509_parser::pem::parse_x509_pem(tls_cert.as_bytes())
            .map_err(|err| anyhow::anyhow!("`tls.crt` is not PEM: {err}"))?;
        let serving = pem
            .parse_x509()
            .map_err(|err| anyhow::anyhow!("`tls.crt` is not a certificate: {err}"))?;
        let not_after = serving.validity().not_after.timestamp();
        let names = serving.subject_alternative_name().ok().flatten();
        let names = names.iter().flat_map(|san| &san.value.general_names);
        let dns_names = names.filter_map(|name| match name {
            GeneralName::DNSName(name) => Some(name.to_string()),
            _ => None,
        });
        Ok(Self {
            ca_cert: text("ca.crt")?,
            ca_key: text("ca.key")?,
            tls_key: text("tls.key")?,
            not_after: OffsetDateTime::from_unix_timestamp(not_after)?,
            dns_names: dns_names.collect(),
            tls_cert,
        })
    }

    /// Writes `tls.crt` and `tls.key` into `dir`, where the webhook server reads them, if
    /// they changed.
    pub(super) fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (file, pem) in [("tls.key", &self.tls_key), ("tls.crt", &self.tls_cert)] {
            let path = dir.join(file);
            if std::fs::read_to_string(&path).ok().as_ref() != Some(pem) {
                std::fs::write(&path, pem)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
        }
        Ok(())
    }
}

/// The name of the CA of the project `project`.
pub(super) fn ca_name(project: &str) -> String {
    format!("{project} webhook CA")
}

/// The parameters of the CA named `ca`: the same name every time, so that a renewal signs as
/// the same CA.
fn ca_params(ca: &str, now: OffsetDateTime) -> anyhow::Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, ca);
    params.distinguished_name = name;
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + CA_LIFETIME;
    Ok(params)
}

/// Certificates hold whole seconds.
fn strip_nanos(time: OffsetDateTime) -> OffsetDateTime {
    time.replace_nanosecond(0).unwrap_or(time)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::fake::{Objects, handshake};
    use super::*;

    const CA: &str = "guestbook webhook CA";

    fn names() -> Vec<String> {
        self_signed().dns_names()
    }

    #[tokio::test]
    async fn the_serving_certificate_is_trusted_through_the_ca_for_the_service_only() {
        let certs = Certs::new(&names(), CA).unwrap();
        handshake(
            &certs.tls_cert,
            &certs.tls_key,
            &certs.ca_cert,
            "webhook-service.system.svc",
        )
        .await
        .unwrap();
        handshake(
            &certs.tls_cert,
            &certs.tls_key,
            &certs.ca_cert,
            "webhook-service.system.svc.cluster.local",
        )
        .await
        .unwrap();
        assert!(
            handshake(
                &certs.tls_cert,
                &certs.tls_key,
                &certs.ca_cert,
                "other.system.svc"
            )
            .await
            .is_err()
        );
        let stranger = Certs::new(&names(), CA).unwrap();
        assert!(
            handshake(
                &certs.tls_cert,
                &certs.tls_key,
                &stranger.ca_cert,
                "webhook-service.system.svc"
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn a_renewal_is_signed_by_the_same_ca() {
        let certs = Certs::new(&names(), CA).unwrap();
        let renewed = certs.renew(&names(), CA).unwrap();
        assert_eq!(renewed.ca_cert, certs.ca_cert);
        assert_ne!(renewed.tls_key, certs.tls_key);
        handshake(
            &renewed.tls_cert,
            &renewed.tls_key,
            &certs.ca_cert,
            "webhook-service.system.svc",
        )
        .await
        .unwrap();
    }

    #[test]
    fn a_renewal_is_due_a_month_before_the_end_or_for_other_names() {
        let certs = Certs::new(&names(), CA).unwrap();
        let now = OffsetDateTime::now_utc();
        assert!(!certs.needs_renewal(&names(), now));
        assert!(certs.needs_renewal(&names(), now + SERVING_LIFETIME - RENEW_BEFORE));
        assert!(certs.needs_renewal(&names()[..1], now));
    }

    #[test]
    fn the_secret_gives_back_the_certificates() {
        let certs = Certs::new(&names(), CA).unwrap();
        let secret = certs.to_secret("webhook-server-cert");
        assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
        assert_eq!(Certs::from_secret(&secret).unwrap(), certs);
    }

    const SECRET: &str = "/api/v1/namespaces/system/secrets/webhook-server-cert";
    const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/mutating-webhook-configuration";
    const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/validating-webhook-configuration";
    const CRD: &str =
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/guestbooks.webapp.example.com";

    fn self_signed() -> SelfSigned {
        SelfSigned {
            secret: "webhook-server-cert".into(),
            namespace: "system".into(),
            service: "webhook-service".into(),
            mutating: Some("mutating-webhook-configuration".into()),
            validating: Some("validating-webhook-configuration".into()),
            crds: vec!["guestbooks.webapp.example.com".into()],
            ca: CA.into(),
        }
    }

    fn seed(objects: &Objects) {
        let service = json!({"service": {"name": "webhook-service", "namespace": "system"}});
        objects.insert(MUTATING, json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [{"name": "mguestbook-v1.webapp.example.com", "clientConfig": service,
                          "admissionReviewVersions": ["v1"], "sideEffects": "None"}],
        }));
        objects.insert(VALIDATING, json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "validating-webhook-configuration"},
            "webhooks": [{"name": "vguestbook-v1.webapp.example.com", "clientConfig": service,
                          "admissionReviewVersions": ["v1"], "sideEffects": "None"}],
        }));
        objects.insert(
            CRD,
            json!({
                "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "guestbooks.webapp.example.com"},
                "spec": {"group": "webapp.example.com", "scope": "Namespaced", "versions": [],
                         "names": {"kind": "Guestbook", "plural": "guestbooks"},
                         "conversion": {"strategy": "Webhook", "webhook": {
                             "clientConfig": service, "conversionReviewVersions": ["v1"]}}},
            }),
        );
    }

    #[tokio::test]
    async fn the_first_replica_makes_the_secret_the_next_uses_it_and_both_inject_its_ca() {
        let objects = Objects::default();
        seed(&objects);
        let dirs = [tempdir("first"), tempdir("second")];
        for dir in &dirs {
            self_signed().provide(&objects.client(), dir).await.unwrap();
        }
        let secret: Secret = serde_json::from_value(objects.get(SECRET).unwrap()).unwrap();
        let certs = Certs::from_secret(&secret).unwrap();
        for dir in &dirs {
            let written = std::fs::read_to_string(dir.join("tls.crt")).unwrap();
            assert_eq!(written, certs.tls_cert);
            std::fs::remove_dir_all(dir).unwrap();
        }
        assert_injected(&objects, certs.ca_cert);
    }

    /// Both configurations and the CRD trust `ca`.
    fn assert_injected(objects: &Objects, ca: String) {
        // As k8s-openapi and the API server write bytes: base64.
        let ca = serde_json::to_value(ByteString(ca.into_bytes())).unwrap();
        for path in [MUTATING, VALIDATING] {
            let configuration = objects.get(path).unwrap();
            assert_eq!(configuration["webhooks"][0]["clientConfig"]["caBundle"], ca);
        }
        let crd = objects.get(CRD).unwrap();
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"],
            ca
        );
    }

    /// Replicas that start together inject the same CA at once: a write that meets another's
    /// (409) is read and written again, not an error that stops the manager.
    #[tokio::test]
    async fn an_injection_that_meets_another_writer_is_made_again() {
        let objects = Objects::default();
        seed(&objects);
        for path in [MUTATING, VALIDATING, CRD] {
            objects.conflict_once(path);
        }
        assert_injected(&objects, provided(&objects, "conflicted").await.ca_cert);
    }

    #[tokio::test]
    async fn a_certificate_near_its_end_is_renewed_by_the_same_ca() {
        let objects = Objects::default();
        seed(&objects);
        // Three days left, whatever an annotation of an earlier version says: the end is
        // read from the certificate.
        let ca_key = KeyPair::generate().unwrap();
        let now = OffsetDateTime::now_utc();
        let ca = ca_params(CA, now).unwrap().self_signed(&ca_key).unwrap();
        let ending = now + time::Duration::days(3);
        let old = Certs::signed(ca.pem(), ca_key, CA, &names(), ending).unwrap();
        let mut secret = old.to_secret("webhook-server-cert");
        let far = (now + SERVING_LIFETIME).unix_timestamp().to_string();
        let annotation = "webhook.kube-scaffold.io/serving-not-after".to_string();
        secret.metadata.annotations = Some([(annotation, far)].into());
        objects.insert(SECRET, serde_json::to_value(secret).unwrap());
        let renewed = provided(&objects, "renewal").await;
        assert_eq!(renewed.ca_cert, old.ca_cert);
        assert_ne!(renewed.tls_cert, old.tls_cert);
        assert!(!renewed.needs_renewal(&names(), OffsetDateTime::now_utc()));
    }

    #[tokio::test]
    async fn a_secret_the_manager_did_not_write_is_replaced() {
        let objects = Objects::default();
        seed(&objects);
        // cert-manager's: a TLS Secret without the manager's annotations or CA key.
        let theirs = json!({
            "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": "webhook-server-cert", "namespace": "system",
                         "resourceVersion": "7"},
            "data": {"tls.crt": "Zm9v", "tls.key": "YmFy", "ca.crt": "YmF6"},
        });
        objects.insert(SECRET, theirs);
        let ours = provided(&objects, "foreign").await;
        assert!(!ours.needs_renewal(&names(), OffsetDateTime::now_utc()));
    }

    /// The certificates the manager provides with `objects` (into a directory named after
    /// `name`, removed after), as the Secret holds them then.
    async fn provided(objects: &Objects, name: &str) -> Certs {
        let dir = tempdir(name);
        self_signed()
            .provide(&objects.client(), &dir)
            .await
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let secret: Secret = serde_json::from_value(objects.get(SECRET).unwrap()).unwrap();
        Certs::from_secret(&secret).unwrap()
    }

    fn tempdir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("certs-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
