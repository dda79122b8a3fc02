//! The controllers of the API group `cert-manager.io`: one module per kind.

pub mod certificate;

// +kube-scaffold:scaffold:controller-modules
