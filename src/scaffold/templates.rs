//! The templates under `scaffolds/`, embedded in the binary and rendered strictly with tera:
//! an undefined variable is an error, never an empty string.
//!
//! A template of the current layout is named by its path under `scaffolds/v3/`, plugin first
//! (`base/init/src/main.rs.tera`, `kustomize/api/config/crd/crd.json.tera`): that directory
//! holds every template the layout renders, whole. A name under `v1/` or `v2/` is a frozen
//! layout's (`layouts/`), as its release shipped it.

use std::sync::Mutex;

use anyhow::Context as _;
use include_dir::{Dir, include_dir};
use serde::Serialize;
use tera::Tera;

static SCAFFOLDS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/scaffolds");
/// The current layout's directory under `scaffolds/`.
const CURRENT: &str = "v3";
/// The frozen layouts' directories: their planners name their templates in full.
const FROZEN: [&str; 2] = ["v1/", "v2/"];
/// The generated operators' runtime crate (the workspace member `runtime/`), which a project
/// of layout v3 holds a copy of; empty in a binary built from its published package (build.rs).
static RUNTIME: Dir<'static> = include_dir!("$KUBE_SCAFFOLD_RUNTIME_SOURCE");

/// The runtime crate's files, as (path in the crate, text), sorted: its manifest, README and
/// sources, and the crate `dylib/` that links them as one shared library; none in a binary
/// built from its published package.
pub fn runtime_files() -> Vec<(String, &'static str)> {
    fn walk(dir: &'static Dir<'static>, out: &mut Vec<(String, &'static str)>) {
        for file in dir.files() {
            let path = file.path().to_string_lossy().replace('\\', "/");
            let wanted = path.starts_with("src/")
                || path.starts_with("dylib/")
                || path == "Cargo.toml"
                || path == "README.md";
            if let (true, Some(text)) = (wanted, file.contents_utf8()) {
                out.push((path, text));
            }
        }
        for sub in dir.dirs() {
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    walk(&RUNTIME, &mut out);
    out.sort();
    out
}

/// Every embedded template, ready to render. A template is parsed when it is first rendered,
/// with the partials it includes and the templates it extends: a command parses the few it
/// renders, not all of them.
pub struct Templates {
    tera: Mutex<Tera>,
    runtime: RuntimeSource,
}

/// Where a project takes the runtime crate from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeSource {
    /// A copy in the project, put in the registry's place by `[patch.crates-io]`.
    Vendored,
    /// crates.io.
    Registry,
}

impl Templates {
    /// Every `.tera` file under `scaffolds/`, named by its path there, for projects that take
    /// the runtime crate from where this binary says: its copy when it embeds one (built in
    /// kube-scaffold's repository), else crates.io.
    pub fn load() -> anyhow::Result<Self> {
        let mut tera = Tera::default();
        tera.autoescape_on(Vec::new());
        let runtime = match RUNTIME.get_file("Cargo.toml") {
            Some(_) => RuntimeSource::Vendored,
            None => RuntimeSource::Registry,
        };
        Ok(Self {
            tera: Mutex::new(tera),
            runtime,
        })
    }

    /// These templates, for a project that takes the runtime crate from `runtime`: what an
    /// earlier kube-scaffold wrote, rendered again.
    pub fn with_runtime(mut self, runtime: RuntimeSource) -> Self {
        self.runtime = runtime;
        self
    }

    /// Where the projects these templates render take the runtime crate from.
    pub fn runtime(&self) -> RuntimeSource {
        self.runtime
    }

    /// Parses the template `name` (its full name) and what it includes or extends, unless
    /// parsed already.
    fn parse(&self, tera: &mut Tera, name: &str) -> anyhow::Result<()> {
        let mut wanted = vec![name.to_string()];
        let mut sources = Vec::new();
        while let Some(name) = wanted.pop() {
            let known = tera.get_template_names().any(|n| n == name);
            if known || sources.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let text = source(&name).with_context(|| format!("no template {name}"))?;
            wanted.extend(dependencies(text));
            sources.push((name, text));
        }
        if !sources.is_empty() {
            tera.add_raw_templates(sources)
                .context("an embedded template does not parse")?;
        }
        Ok(())
    }

    /// The embedded template that `name` is: a path under the current layout's directory,
    /// or a frozen layout's full name.
    pub fn resolve(&self, name: &str) -> String {
        if FROZEN.iter().any(|dir| name.starts_with(dir)) {
            return name.to_string();
        }
        format!("{CURRENT}/{name}")
    }

    /// Renders the template `name` with `context`.
    pub fn render(&self, name: &str, context: &impl Serialize) -> anyhow::Result<String> {
        self.render_with(name, context, &[])
    }

    /// Renders the template `name` with `context` and the variables `vars` beside it.
    pub fn render_with(
        &self,
        name: &str,
        context: &impl Serialize,
        vars: &[(String, String)],
    ) -> anyhow::Result<String> {
        let mut context =
            tera::Context::from_serialize(context).context("cannot build a template context")?;
        for (key, value) in vars {
            context.insert(key, value);
        }
        let name = &self.resolve(name);
        let mut tera = self.tera.lock().expect("no template render panicked");
        self.parse(&mut tera, name)?;
        tera.render(name, &context)
            .map_err(|err| anyhow::anyhow!("{}", error_chain(&err)))
            .with_context(|| format!("cannot render template {name}"))
    }
}

/// The templates `text` includes or extends, by full name.
pub fn dependencies(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for tag in ["include \"", "extends \""] {
        for (at, _) in text.match_indices(tag) {
            let rest = &text[at + tag.len()..];
            if let Some(end) = rest.find('"') {
                names.push(rest[..end].to_string());
            }
        }
    }
    names
}

/// The text of the embedded template `name` (its full name, `v3/...`), as written.
pub fn source(name: &str) -> Option<&'static str> {
    SCAFFOLDS.get_file(name).and_then(|f| f.contents_utf8())
}

/// The names of all embedded templates.
pub fn names() -> Vec<String> {
    fn walk(dir: &Dir<'_>, out: &mut Vec<String>) {
        for file in dir.files() {
            let name = file.path().to_string_lossy().into_owned();
            if name.ends_with(".tera") {
                out.push(name);
            }
        }
        for sub in dir.dirs() {
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    walk(&SCAFFOLDS, &mut out);
    out.sort();
    out
}

/// tera hides the useful message in its error's sources.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(e) = source {
        parts.push(e.to_string());
        source = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template of the current layout is the whole file it renders: it includes, extends and
    /// overrides nothing (the frozen layouts' may).
    #[test]
    fn the_current_layouts_templates_are_whole() {
        let current = format!("{CURRENT}/");
        let mut pieced = Vec::new();
        for name in names().iter().filter(|name| name.starts_with(&current)) {
            let text = source(name).unwrap();
            let blocks = ["{% block", "{%- block"]
                .iter()
                .any(|tag| text.contains(tag));
            if blocks || !dependencies(text).is_empty() {
                pieced.push(name.clone());
            }
        }
        assert!(pieced.is_empty(), "templates made of pieces: {pieced:?}");
        assert!(names().len() > 100);
    }
}
