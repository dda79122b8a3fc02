//! Tests against a real Kubernetes control plane (etcd, kube-apiserver,
//! kube-controller-manager, built by `scripts/control-plane`): the generated project's
//! manager, its make targets and its webhooks, as its user runs them, with kubectl and cargo
//! only. One control plane serves every test of this binary; the tests take turns
//! (`project::turn`), since they share it, a project, and the manager's ports.

// Shared with tests/node, which uses the node's parts.
mod cert_manager;
mod children;
#[allow(dead_code)]
#[path = "../shared/control_plane.rs"]
mod control_plane;
mod conversion;
mod every_kind;
mod faults;
#[path = "../shared/generated_build.rs"]
mod generated_build;
mod helm;
mod leader;
mod namespaced;
#[path = "../shared/project.rs"]
mod project;
mod readme;
mod self_signed;
mod sharding;
mod state;
mod tutorial;
mod webhooks;

/// The control plane on loopback: no node runs pods.
const TOPOLOGY: control_plane::Topology = control_plane::Topology::Loopback;
