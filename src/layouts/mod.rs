//! Released layouts that the plugins no longer render: each is frozen as its release planned it,
//! so that `upgrade` can render exactly what that release generated (the base of its three-way
//! merge). Layouts the plugins render (v2, v3) are `scaffolds/<layout>/` and
//! `model::project::Layout`.

pub mod v1;
pub mod v2;
