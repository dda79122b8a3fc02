//! What layout v2 generates from other sources than its templates, as it did when it was
//! frozen: the kinds' Rust types from CRDs (kopium) and the fields its conversions copy. A
//! copy of the tool's `codegen` module, which later layouts change.

pub mod adopted;
pub mod external;
pub mod fields;
