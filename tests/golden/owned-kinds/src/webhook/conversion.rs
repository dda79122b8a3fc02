//! The conversions of the project's kinds: every version of a kind converts to and from one
//! version, the hub, with the `From` impls in `src/api/<group>/<version>/<kind>_conversion.rs`.
//! `kube-scaffold create webhook --conversion --spoke <version>` adds them.

use kube_scaffold_runtime::webhook::conversion::Conversion;

/// Every conversion of the project: one per version of a kind other than its hub.
pub fn conversions() -> Vec<Conversion> {
    vec![
        crate::api::webapp::v1::guestbook_conversion::conversion(),
        // +kube-scaffold:scaffold:conversions
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_conversion_is_between_two_versions_of_one_kind() {
        for conversion in conversions() {
            assert_ne!(conversion.hub, conversion.spoke, "{}", conversion.kind);
            let hubs: Vec<_> = conversions()
                .into_iter()
                .filter(|c| (&c.group, &c.kind) == (&conversion.group, &conversion.kind))
                .map(|c| c.hub)
                .collect();
            assert!(hubs.iter().all(|hub| *hub == conversion.hub), "{hubs:?}");
        }
    }
}
