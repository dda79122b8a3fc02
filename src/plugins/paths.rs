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

/// A kind's controller: `src/controller/<kind>.rs`.
pub fn controller(kind: &str) -> String {
    format!("src/controller/{kind}.rs")
}

/// A hook's module: `src/webhook/<module>.rs`.
pub fn webhook(module: &str) -> String {
    format!("src/webhook/{module}.rs")
}

/// A kind's sample: `config/samples/<file>`.
pub fn sample(file: &str) -> String {
    format!("config/samples/{file}")
}

/// A kind's role for editors or viewers (`role` is `editor` or `viewer`):
/// `config/rbac/<kind>_<role>_role.yaml`.
pub fn kind_role(kind_lower: &str, role: &str) -> String {
    format!("config/rbac/{kind_lower}_{role}_role.yaml")
}

/// A CRD, as config/crd's kustomization lists it: `bases/<group>_<plural>.yaml`.
pub fn crd_base(qualified_group: &str, plural: &str) -> String {
    format!("bases/{qualified_group}_{plural}.yaml")
}

/// A CRD's file: `config/crd/bases/<group>_<plural>.yaml`.
pub fn crd(qualified_group: &str, plural: &str) -> String {
    format!("config/crd/{}", crd_base(qualified_group, plural))
}
