//! The generated e2e test, run by `make test-e2e` on the node as on any cluster that is not
//! kind: the context named by `E2E_CONTEXT`, the image pushed to a registry the node pulls
//! from (`E2E_LOAD=push`, the default off kind). It builds, pushes and deploys the image, checks
//! every sample through the webhooks, then undeploys and uninstalls.

use crate::project::turn;
use crate::ship::{NAMESPACE, ship};

#[test]
fn make_test_e2e_passes_on_a_cluster_named_by_its_context() {
    let _turn = turn();
    let ship = ship();
    let project = &ship.project;
    // The administrator's kubeconfig names its one context `admin`.
    let output = ship.make(&[
        "test-e2e",
        "E2E_CONTEXT=admin",
        "E2E_IMG=localhost:5000/ship:e2e",
        "CERT_MANAGER_INSTALL_SKIP=true",
    ]);
    assert!(
        output.contains("every_sample_becomes_available_and_is_cleaned_up ... ok"),
        "make test-e2e:\n{output}"
    );
    let namespaces = project.kubectl(&["get", "namespace", "-o", "name"]);
    assert!(!namespaces.contains(NAMESPACE), "test-e2e left {NAMESPACE}");
}

#[test]
fn make_test_e2e_refuses_a_context_the_kubeconfig_does_not_have() {
    let _turn = turn();
    let ship = ship();
    let output = ship
        .project
        .output("make", &["test-e2e", "E2E_CONTEXT=nowhere"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success());
    assert!(
        stderr.contains("error: no kubectl context `nowhere` (E2E_CONTEXT)")
            && stderr.contains("help: "),
        "{stdout}{stderr}"
    );
}
