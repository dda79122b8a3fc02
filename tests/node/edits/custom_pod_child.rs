/// The `Pod` a `CustomPod` runs: the pause image, restricted; `scale` names each.
impl Child<Object> for Pod {
    fn build(owner: &Object) -> Self {
        use k8s_openapi::api::core::v1::{
            Capabilities, Container, PodSpec, SeccompProfile, SecurityContext,
        };
        let security = SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(1001),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".into()]),
                ..Capabilities::default()
            }),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                ..SeccompProfile::default()
            }),
            ..SecurityContext::default()
        };
        Self {
            metadata: children::meta(owner),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "pause".into(),
                    image: Some("localhost:5000/pause:3.10".into()),
                    security_context: Some(security),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            ..Self::default()
        }
    }

    fn not_ready(&self) -> Option<String> {
        let phase = self.status.as_ref().and_then(|s| s.phase.as_deref());
        (phase != Some("Running")).then(|| format!("the pod is {}", phase.unwrap_or("new")))
    }
}
