//! The conversions between `Guestbook` v1 (this module's version, a spoke) and
//! v2, the kind's hub: the manager's conversion webhook converts between any two versions
//! through the hub (`crate::webhook::conversion`).
//!
//! Fields of the same name and type are copied. Write the others: what one version has and the
//! other lacks must survive the trip there and back (in an annotation, say), or the round-trip
//! tests below fail.

use kube_scaffold_runtime::webhook::conversion::Conversion;

use crate::api::webapp::v2::Guestbook as Hub;
use crate::api::webapp::v2::GuestbookSpec as HubSpec;
use crate::api::webapp::v2::GuestbookStatus as HubStatus;

use super::Guestbook as Spoke;
use super::GuestbookSpec as SpokeSpec;
use super::GuestbookStatus as SpokeStatus;

/// The conversions of `Guestbook` v1, as `crate::webhook::conversion::conversions` lists them.
pub fn conversion() -> Conversion {
    Conversion::between::<Hub, Spoke>()
}

impl From<Spoke> for Hub {
    fn from(spoke: Spoke) -> Self {
        Self {
            metadata: spoke.metadata,
            spec: HubSpec {
                // Each field from the field of the same name and type, if there is one.
                foo: spoke.spec.foo,
            },
            status: spoke.status.map(|status| HubStatus {
                // Each field from the field of the same name and type, if there is one.
                observed_generation: status.observed_generation,
                conditions: status.conditions,
            }),
        }
    }
}

impl From<Hub> for Spoke {
    fn from(hub: Hub) -> Self {
        Self {
            metadata: hub.metadata,
            spec: SpokeSpec {
                // Each field from the field of the same name and type, if there is one.
                foo: hub.spec.foo,
            },
            status: hub.status.map(|status| SpokeStatus {
                // Each field from the field of the same name and type, if there is one.
                observed_generation: status.observed_generation,
                conditions: status.conditions,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use kube_scaffold_runtime::testing::round_trips;

    use super::*;

    /// Any v1 object its schema allows converts to v2 and back unchanged.
    #[test]
    fn v1_to_v2_and_back_is_unchanged() {
        round_trips::<Spoke, Hub>();
    }

    /// Any v2 object its schema allows converts to v1 and back unchanged.
    #[test]
    fn v2_to_v1_and_back_is_unchanged() {
        round_trips::<Hub, Spoke>();
    }
}
