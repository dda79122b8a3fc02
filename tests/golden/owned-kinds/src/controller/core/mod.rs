//! The controllers of the API group `core`: one module per kind.

// What `crate::controller` offers its controllers (the `Builder`, the `Context`, `rule`...),
// in reach of each kind's module here as `super::`.
use super::*;

pub mod pod;

// +kube-scaffold:scaffold:controller-modules
