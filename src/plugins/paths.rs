//! Where the plugins' generated files go, computed from the names in one place: a path is never
//! spelled twice. (0.1's frozen layout, `layouts::v1`, keeps its own.)

/// A group's module: `src/api/<group>/mod.rs`.
pub fn group_module(group: &str) -> String {
    format!("src/api/{group}/mod.rs")
}

/// A version's module: `src/api/<group>/<version>/mod.rs`.
pub fn version_module(group: &str, version: &str) -> String {
    format!("src/api/{group}/{version}/mod.rs")
}

/// A module of a version: a kind's types, or a spoke's conversions
/// (`src/api/<group>/<version>/<module>.rs`).
pub fn api_module(group: &str, version: &str, module: &str) -> String {
    format!("src/api/{group}/{version}/{module}.rs")
}

/// A kind's controller: `src/controller/<kind>.rs`, or in a multigroup project (`group` given)
/// `src/controller/<group>/<kind>.rs`.
pub fn controller(group: Option<&str>, kind: &str) -> String {
    match group {
        None => format!("src/controller/{kind}.rs"),
        Some(group) => format!("src/controller/{group}/{kind}.rs"),
    }
}

/// A group's controllers in a multigroup project: `src/controller/<group>/mod.rs`.
pub fn controller_group(group: &str) -> String {
    format!("src/controller/{group}/mod.rs")
}

/// A hook's module: `src/webhook/<module>.rs`, or in a multigroup project
/// `src/webhook/<group>/<module>.rs`.
pub fn webhook(group: Option<&str>, module: &str) -> String {
    match group {
        None => format!("src/webhook/{module}.rs"),
        Some(group) => format!("src/webhook/{group}/{module}.rs"),
    }
}

/// A group's hooks in a multigroup project: `src/webhook/<group>/mod.rs`.
pub fn webhook_group(group: &str) -> String {
    format!("src/webhook/{group}/mod.rs")
}

/// A kind's sample: `config/samples/<file>`.
pub fn sample(file: &str) -> String {
    format!("config/samples/{file}")
}

/// A kind's role for editors or viewers (`role` is `editor` or `viewer`), as
/// config/rbac's kustomization lists it: `<prefix>_<role>_role.yaml`, the prefix the kind
/// (`guestbook`), after its group in a multigroup project (`webapp_guestbook`).
pub fn kind_role_base(prefix: &str, role: &str) -> String {
    format!("{prefix}_{role}_role.yaml")
}

/// A kind's role's file: `config/rbac/<prefix>_<role>_role.yaml`.
pub fn kind_role(prefix: &str, role: &str) -> String {
    format!("config/rbac/{}", kind_role_base(prefix, role))
}

/// A CRD, as config/crd's kustomization lists it: `bases/<group>_<plural>.yaml`.
pub fn crd_base(qualified_group: &str, plural: &str) -> String {
    format!("bases/{qualified_group}_{plural}.yaml")
}

/// A CRD's file: `config/crd/bases/<group>_<plural>.yaml`.
pub fn crd(qualified_group: &str, plural: &str) -> String {
    format!("config/crd/{}", crd_base(qualified_group, plural))
}
