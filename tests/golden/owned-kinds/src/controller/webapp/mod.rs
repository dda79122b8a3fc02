//! The controllers of the API group `webapp`: one module per kind.

pub mod guestbook;

pub mod site;

// +kube-scaffold:scaffold:controller-modules
