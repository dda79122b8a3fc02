//! The controllers of the API group `ops.example.org`: one module per kind.

pub mod backup;

// +kube-scaffold:scaffold:controller-modules
