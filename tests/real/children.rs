//! Many children of one kind per object, on a real API server, as kubebuilder's CronJob owns
//! its Jobs: a generated controller, edited as docs/commands.md says (`Owned::many` in its
//! `OWNED`, `Children` in `apply`), makes a ConfigMap per member of a `Crew`, each with its
//! own name, and deletes those of members who left. Its manager runs with exactly the
//! generated ServiceAccount's permissions and is never forbidden. A change to a child made by
//! someone else reconciles its owner, which reads it from the cache as changed; a child
//! deleted by hand comes back; an object of a child's name that the Crew does not control is
//! left alone, and the reconcile says why.

use std::fs;

use crate::project::{Project, edit, turn};

const NAMESPACE: &str = "crew-system";

/// The user's types: a crew's members.
const SPEC: &str = r#"    /// The crew's members: each gets a ConfigMap of its own, `<crew>-<member>`.
    #[serde(default)]
    pub members: Vec<String>,
"#;

/// The user's lines in `apply`: the crew's ConfigMaps, one per member, named by the user.
const APPLY: &str = r#"    let seats: Children<ConfigMap> = Children::of(ctx, obj).await?;
    let member = |seat: &ConfigMap| seat.data.as_ref()?.get("member").cloned();
    let mut confirmed = 0;
    for seat in seats.list() {
        match member(seat) {
            Some(member) if obj.spec.members.contains(&member) => {
                let data = seat.data.as_ref();
                let yes = data.and_then(|d| d.get("confirmed")).is_some_and(|c| c == "yes");
                confirmed += usize::from(yes);
            }
            _ => seats.delete(seat).await?,
        }
    }
    for member in &obj.spec.members {
        let name = format!("{}-{member}", obj.name_any());
        if seats.get(&name).is_none() {
            let seat = ConfigMap {
                metadata: children::named(obj, &name),
                data: Some([("member".to_string(), member.clone())].into()),
                ..ConfigMap::default()
            };
            seats.apply(&seat, FIELD_MANAGER).await?;
        }
    }

    let available = conditions::Status::True;
    let reason = "Reconciled";
    let message = format!("{} members, {confirmed} confirmed", obj.spec.members.len());
"#;

#[test]
fn a_controller_names_builds_and_deletes_many_children_of_one_kind() {
    let _turn = turn();
    let project = Project::init("crew", &["--domain", "crew.example"]);
    let kind = "create api --group fleet --version v1 --kind Crew --resource --controller";
    project.scaffold(&kind.split(' ').collect::<Vec<_>>());
    edit_into_a_crew_operator(&project);
    project.run("make", &["manifests", "install"]);
    let role = fs::read_to_string(project.dir.join("config/rbac/role.yaml")).unwrap();
    let configmaps = role
        .split("\n- ")
        .find(|rule| rule.contains("- configmaps"));
    let configmaps = configmaps.expect("a rule for ConfigMaps");
    assert!(configmaps.contains("- delete"), "{role}");
    project.wait_established("crd/crews.fleet.crew.example");
    let (kubeconfig, _) = project.manager_identity(NAMESPACE);
    project.run("cargo", &["build", "--bin", "crew"]);
    let mut command = project.command(&project.manager(), &[]);
    command
        .env("KUBECONFIG", &kubeconfig)
        .env("POD_NAMESPACE", NAMESPACE);
    let manager = project.start(command);
    let log = || manager.log();

    let crew = |members: &str| {
        let manifest = format!(
            "apiVersion: fleet.crew.example/v1\nkind: Crew\n\
             metadata: {{name: alpha, namespace: default}}\nspec: {{members: [{members}]}}\n"
        );
        let output = project.apply(&manifest);
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{said}");
    };
    let seats = || {
        let names = project.kubectl(&[
            "get",
            "configmaps",
            "-n",
            "default",
            "-l",
            "app.kubernetes.io/instance=alpha",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ]);
        names
            .split_whitespace()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let message = || {
        project.jsonpath(
            &["crews.fleet.crew.example/alpha", "-n", "default"],
            "{.status.conditions[?(@.type==\"Available\")].message}",
        )
    };

    crew("a, b, c");
    project.wait("a ConfigMap per member", 60, log, || {
        seats() == ["alpha-a", "alpha-b", "alpha-c"]
    });
    let owner = project.jsonpath(
        &["configmap", "alpha-b", "-n", "default"],
        "{.metadata.ownerReferences[0]}",
    );
    let owner: serde_json::Value = serde_json::from_str(&owner).unwrap();
    assert_eq!(owner["kind"], "Crew", "{owner}");
    assert_eq!(owner["name"], "alpha", "{owner}");
    assert_eq!(owner["controller"], true, "{owner}");
    project.wait("the crew counted", 60, log, || {
        message() == "3 members, 0 confirmed"
    });

    // Someone else changes a child: its owner is reconciled and reads the change.
    let confirm = r#"{"data":{"confirmed":"yes"}}"#;
    let patch = ["patch", "configmap", "alpha-b", "-n", "default"];
    project.kubectl(&[&patch[..], &["--type=merge", "-p", confirm]].concat());
    project.wait("the confirmation counted", 60, log, || {
        message() == "3 members, 1 confirmed"
    });

    // A child deleted by hand is made again.
    let uid = || {
        let object = ["configmap", "alpha-a", "-n", "default"];
        project.jsonpath(&object, "{.metadata.uid}")
    };
    let first = uid();
    project.kubectl(&["delete", "configmap", "alpha-a", "-n", "default"]);
    project.wait("alpha-a made again", 60, log, || {
        !uid().is_empty() && uid() != first
    });

    // Members leave and one joins whose name another object has: the leavers' children are
    // deleted; the other object is left alone, and the reconcile says why.
    project.kubectl(&[
        "create",
        "configmap",
        "alpha-d",
        "-n",
        "default",
        "--from-literal=owner=nobody",
    ]);
    crew("a, d");
    project.wait("the leavers' ConfigMaps deleted", 60, log, || {
        !seats().contains(&"alpha-b".to_string()) && !seats().contains(&"alpha-c".to_string())
    });
    project.wait("the conflict logged", 60, log, || {
        log().contains("ConfigMap alpha-d exists and is not controlled by this Crew")
    });
    let foreign = ["configmap", "alpha-d", "-n", "default"];
    assert_eq!(
        project.jsonpath(&foreign, "{.metadata.ownerReferences}"),
        ""
    );
    assert_eq!(project.jsonpath(&foreign, "{.data.owner}"), "nobody");

    let log = manager.stop_unforbidden();
    assert!(!log.contains("panicked"), "{log}");
    project.kubectl(&["delete", "configmap", "alpha-d", "-n", "default"]);
    project.kubectl(&[
        "delete",
        "crews.fleet.crew.example",
        "--all",
        "-A",
        "--wait=false",
    ]);
    project.run("make", &["uninstall"]);
}

/// The user's edits: the members in the spec, and the controller owning a ConfigMap per
/// member (docs/commands.md, "Many children of one kind").
fn edit_into_a_crew_operator(project: &Project) {
    let dir = &project.dir;
    let edit = |file: &str, from: &str, to: &str| edit(&dir.join(file), from, to);
    edit(
        "src/api/fleet/v1/crew.rs",
        "    /// An example field. Replace it with your own.\n    #[serde(default, skip_serializing_if = \"Option::is_none\")]\n    pub foo: Option<String>,\n",
        SPEC,
    );
    let controller = "src/controller/crew.rs";
    edit(
        controller,
        "use kube_scaffold_runtime::conditions;\n",
        "use k8s_openapi::api::core::v1::ConfigMap;\nuse kube_scaffold_runtime::children::{self, Children, Owned};\nuse kube_scaffold_runtime::conditions;\n",
    );
    edit(
        controller,
        "const CONDITIONS: &[&str] = &[conditions::AVAILABLE];\n",
        "const CONDITIONS: &[&str] = &[conditions::AVAILABLE];\n/// The kinds a `Crew` owns.\nconst OWNED: &[Owned<Object, crate::State>] = &[Owned::many::<ConfigMap>()];\n",
    );
    edit(
        controller,
        "    Builder::new(CONTROLLER).start(ctx, reconcile)\n",
        "    Builder::new(CONTROLLER).owns(OWNED).start(ctx, reconcile)\n",
    );
    edit(
        controller,
        "        rule(&group, &status, &[\"get\", \"patch\"]),\n    ]\n",
        "        rule(&group, &status, &[\"get\", \"patch\"]),\n    ]\n    .into_iter()\n    .chain(OWNED.iter().flat_map(|owned| (owned.rules)()))\n    .collect()\n",
    );
    edit(
        controller,
        "    let available = conditions::Status::True;\n    let reason = \"Reconciled\";\n    let message = format!(\"The {} is reconciled\", Object::kind(&()));\n",
        APPLY,
    );
    project.run("cargo", &["fmt"]);
    // The generated unit tests, whose context has no owned watch: `Children` lists from the
    // mocked API server.
    project.run("cargo", &["test", "--lib"]);
}
