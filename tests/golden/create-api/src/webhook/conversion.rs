// Copyright 2026 The Guestbook Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! The conversions of the project's kinds: every version of a kind converts to and from one
//! version, the hub, with the `From` impls in `src/api/<group>/<version>/<kind>_conversion.rs`.
//! `kube-scaffold create webhook --conversion --spoke <version>` adds them.

pub use kube_scaffold_runtime::webhook::conversion::*;

/// Every conversion of the project: one per version of a kind other than its hub.
pub fn conversions() -> Vec<Conversion> {
    vec![
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
