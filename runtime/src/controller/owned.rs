//! What a controller holds of the kinds it owns: the [`Owned`] table its [`Builder`] watches,
//! and the writes and caches of the children in its [`Context`]. The `children` module makes
//! and reads them (`Owned::of`, `Owned::many`, `Children`).
//!
//! [`Builder`]: super::Builder

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::Resource;
use kube::runtime::Controller;
use serde::de::DeserializeOwned;

use super::{Context, Result};

/// A kind whose objects own children: what kube's `Controller` needs of the kind it runs for.
pub trait Owner:
    Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static
{
}

impl<O> Owner for O where
    O: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static
{
}

/// What `apply` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The child is applied and ready.
    Ready,
    /// The child is applied; it says why it is not ready yet.
    NotReady(String),
    /// An object of the child's name exists and another owner, or nobody, controls it: it was
    /// left alone.
    Foreign(String),
}

/// A future that applies one child.
pub type Applying<'a> = BoxFuture<'a, Result<Applied>>;

/// One kind a controller owns, as the controller uses it: `Owned::of::<Deployment>()` or
/// `Owned::many::<Job>()`. `S` is the project's state in the controller's [`Context`].
pub struct Owned<O: Owner, S = ()> {
    /// Adds the watch of the children to the owner's controller.
    pub watch: fn(Controller<O>, &Context<S>) -> Controller<O>,
    /// Builds the child of an owner and applies it with the given field manager; for
    /// `Owned::many`, nothing: the reconcile applies those children itself.
    pub apply: for<'a> fn(&'a O, &'a Context<S>, &'static str) -> Applying<'a>,
    /// The RBAC rules the controller needs for the children.
    pub rules: fn() -> Vec<PolicyRule>,
}

/// The children `apply` is writing or wrote whose watch event has not come back yet: by owner
/// kind and child, the resource version each write returned. The owned watch drops an event at
/// that version, so that applying a child does not reconcile its owner a second time (on an
/// owner the cache may not yet show with the status that reconcile wrote); any other change to
/// the child has another version and reconciles the owner. Any event of a child forgets its
/// write. The event of a write can come before the write's answer: an event of a child being
/// written waits for the answer (`children::ECHO_WAIT` at most).
#[derive(Clone, Debug, Default)]
pub(crate) struct Writes {
    pub(crate) writes: Arc<Mutex<HashMap<String, Write>>>,
    /// Told when a write is answered (or given up).
    pub(crate) answered: Arc<tokio::sync::watch::Sender<()>>,
}

/// A child's write, by [`Writes`].
#[derive(Debug)]
pub(crate) enum Write {
    /// Sent, not answered yet.
    Sent,
    /// Answered with this resource version.
    Answered(String),
}

/// The caches of the kinds owned many per owner (`Owned::many`), by owner kind and child kind:
/// filled by the owned watches, read by `children::Children::of`.
#[derive(Clone, Default)]
pub(crate) struct Caches(pub(crate) Arc<Mutex<HashMap<(TypeId, TypeId), Cache>>>);

/// One kind's cache: a `children::Cached<K>`.
pub(crate) type Cache = Box<dyn Any + Send + Sync>;

impl Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches").finish_non_exhaustive()
    }
}
