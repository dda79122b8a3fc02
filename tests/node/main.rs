//! Tests on a real node: the control plane of tests/real beside a kubelet, kube-proxy,
//! kube-scheduler, containerd and a registry on this machine (`scripts/node`), so that a
//! generated project's image is built, pushed and deployed, and its pods run, as its user
//! does it with the generated Makefile. One node serves every test of this binary; the tests
//! take turns (`project::turn`) and share one project and its image (`ship`).

mod cert_manager;
// Shared with tests/real, which uses all of them.
#[allow(dead_code)]
#[path = "../shared/control_plane.rs"]
mod control_plane;
mod deploy;
mod e2e;
#[path = "../shared/generated_build.rs"]
mod generated_build;
mod helm;
mod image;
mod leader;
#[allow(dead_code)]
#[path = "../shared/project.rs"]
mod project;
mod sharding;
mod ship;

/// The control plane on the node's address, beside the node.
const TOPOLOGY: control_plane::Topology = control_plane::Topology::Node;
