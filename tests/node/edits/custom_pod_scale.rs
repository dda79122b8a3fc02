/// Applies the pods `obj.spec.replicas` asks for (1 unless set), `<name>-0` and up, each the
/// `Pod` below under its own name, and deletes this object's other pods; says why those it
/// keeps are not ready yet.
async fn scale(obj: &Object, ctx: &Context) -> Result<Vec<String>> {
    use kube::api::{DeleteParams, ListParams, Patch, PatchParams};

    let pods = Api::<Pod>::namespaced(ctx.client.clone(), &obj.namespace().unwrap_or_default());
    let replicas = obj.spec.replicas.unwrap_or(1).max(0);
    let names: Vec<String> = (0..replicas)
        .map(|i| format!("{}-{i}", obj.name_any()))
        .collect();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut waiting = Vec::new();
    for name in &names {
        let mut pod = Pod::build(obj);
        pod.metadata.name = Some(name.clone());
        let applied = pods.patch(name, &params, &Patch::Apply(&pod)).await?;
        waiting.extend(applied.not_ready().map(|why| format!("{name}: {why}")));
    }
    let labels = children::labels(obj).into_iter();
    let selector: Vec<String> = labels.map(|(k, v)| format!("{k}={v}")).collect();
    let listed = pods
        .list(&ListParams::default().labels(&selector.join(",")))
        .await?;
    let uid = obj.uid();
    for pod in listed {
        let owned = pod
            .owner_references()
            .iter()
            .any(|r| Some(&r.uid) == uid.as_ref());
        if owned && !names.contains(&pod.name_any()) {
            pods.delete(&pod.name_any(), &DeleteParams::default())
                .await?;
        }
    }
    Ok(waiting)
}

