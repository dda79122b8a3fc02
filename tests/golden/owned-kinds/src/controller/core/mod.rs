//! The controllers of the API group `core`: one module per kind.

pub mod pod;

// +kube-scaffold:scaffold:controller-modules
