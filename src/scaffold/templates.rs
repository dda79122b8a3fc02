//! The templates under `scaffolds/`, embedded in the binary and rendered strictly with tera:
//! an undefined variable is an error, never an empty string.

use anyhow::Context as _;
use include_dir::{Dir, include_dir};
use serde::Serialize;
use tera::Tera;

static SCAFFOLDS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/scaffolds");

/// Every embedded template, ready to render.
pub struct Templates {
    tera: Tera,
}

impl Templates {
    /// Loads every `.tera` file under `scaffolds/`, named by its path there.
    pub fn load() -> anyhow::Result<Self> {
        let mut tera = Tera::default();
        tera.autoescape_on(Vec::new());
        let sources = names()
            .into_iter()
            .map(|name| {
                let text = SCAFFOLDS
                    .get_file(&name)
                    .and_then(|f| f.contents_utf8())
                    .with_context(|| format!("template {name} is not UTF-8"))?;
                Ok((name, text))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        tera.add_raw_templates(sources)
            .context("an embedded template does not parse")?;
        Ok(Self { tera })
    }

    /// Renders the template `name` with `context`.
    pub fn render(&self, name: &str, context: &impl Serialize) -> anyhow::Result<String> {
        let context =
            tera::Context::from_serialize(context).context("cannot build a template context")?;
        self.tera
            .render(name, &context)
            .map_err(|err| anyhow::anyhow!("{}", error_chain(&err)))
            .with_context(|| format!("cannot render template {name}"))
    }
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
