//! The controllers of the API group `example.com`: one module per kind.

pub mod memcached;

// +kube-scaffold:scaffold:controller-modules
