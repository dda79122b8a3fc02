//! What a command wants written: files from templates and fragments inserted before markers.

use super::marker::Marker;

/// What to do when a planned file already exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IfExists {
    /// Refuse, unless the user passed `--force`.
    Error,
    /// Keep the existing file: it is the user's now.
    Skip,
    /// Rewrite it: the tool owns it.
    Overwrite,
}

/// One file a plugin scaffolds at a fixed place, declared once in the plugin's table: its
/// template (a path under a layout's directory), its destination, what to do when it exists,
/// and the markers in it that later commands insert before (kubebuilder's machinery.Template).
/// Files whose place comes from the names (a kind's, a hook's) are planned with `Plan::file`
/// and a path from the plugin's `paths`.
#[derive(Clone, Copy, Debug)]
pub struct Descriptor {
    pub template: &'static str,
    pub dest: &'static str,
    pub if_exists: IfExists,
    pub markers: &'static [Marker],
}

impl Descriptor {
    /// A file without markers.
    pub const fn new(template: &'static str, dest: &'static str, if_exists: IfExists) -> Self {
        Self {
            template,
            dest,
            if_exists,
            markers: &[],
        }
    }

    /// The same file, holding `markers` (each must name it as its file).
    pub const fn with_markers(self, markers: &'static [Marker]) -> Self {
        Self { markers, ..self }
    }
}

/// Joins a rendered document into the one a file holds: `(existing, rendered) -> content`.
pub type Merge = fn(serde_json::Value, serde_json::Value) -> anyhow::Result<serde_json::Value>;

/// How a rendered template becomes the file's content.
#[derive(Clone, Copy, Debug)]
pub enum Output {
    /// As rendered (Rust sources are formatted with rustfmt).
    Text,
    /// The template renders JSON; the file is that document in YAML, after `header`.
    YamlFromJson { header: &'static str },
    /// Like `YamlFromJson`, but an existing file is not replaced: `merge` joins the rendered
    /// document into the one the file holds (its `IfExists` is not consulted).
    YamlMerged { header: &'static str, merge: Merge },
    /// Like `YamlMerged`, for a template that renders only a part of the document: a missing
    /// file stays missing (`make manifests` writes it whole).
    YamlPatched { header: &'static str, merge: Merge },
}

/// One file rendered from a template.
#[derive(Clone, Debug)]
pub struct FileSpec {
    /// The template's path under `scaffolds/`.
    pub template: String,
    /// The destination, relative to the project root.
    pub dest: String,
    pub if_exists: IfExists,
    pub output: Output,
    /// For one file of a list (one per version, say): what its template sees as `item`.
    pub item: Option<serde_json::Value>,
}

/// A file whose whole content the command computed (like PROJECT); it replaces what is there.
#[derive(Clone, Debug)]
pub struct Computed {
    pub dest: String,
    pub content: String,
}

/// A file whose content a plugin computed (not from a template: helm's chart is made from a
/// build's output), met like a template's file (`IfExists`).
#[derive(Clone, Debug)]
pub struct Derived {
    pub dest: String,
    pub content: String,
    pub if_exists: IfExists,
}

/// A fragment inserted above the line `<comment> +kube-scaffold:scaffold:<marker>` of a file.
#[derive(Clone, Debug)]
pub struct Insert {
    pub file: String,
    pub marker: String,
    pub fragment: Fragment,
}

/// What an insert adds: text, or a template (a path under `scaffolds/`) rendered with the
/// command's context and `vars`, without its last line break.
#[derive(Clone, Debug)]
pub enum Fragment {
    Text(String),
    Template {
        template: String,
        vars: Vec<(String, String)>,
    },
}

/// Everything one command writes; contents are rendered and checked before anything is written.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub files: Vec<FileSpec>,
    pub derived: Vec<Derived>,
    pub inserts: Vec<Insert>,
    pub computed: Vec<Computed>,
    /// Files the command deletes, if they exist.
    pub removed: Vec<String>,
    /// Files the command moves, as they are (`from`, `to`), if they exist.
    pub moved: Vec<(String, String)>,
}

impl Plan {
    /// Adds the file `d` describes.
    pub fn add(&mut self, d: &Descriptor) {
        self.file(d.template, d.dest, d.if_exists);
    }

    /// Adds every file of `table`.
    pub fn add_all(&mut self, table: &[Descriptor]) {
        for d in table {
            self.add(d);
        }
    }

    /// Adds a file from `template` (a path under `scaffolds/`) to `dest`.
    pub fn file(&mut self, template: &str, dest: impl Into<String>, if_exists: IfExists) {
        self.push(template, dest, if_exists, Output::Text, None);
    }

    /// Adds a file from `template` to `dest`, one of a list: the template sees `item`.
    pub fn file_of(
        &mut self,
        template: &str,
        dest: impl Into<String>,
        if_exists: IfExists,
        item: &impl serde::Serialize,
    ) -> anyhow::Result<()> {
        let item = Some(serde_json::to_value(item)?);
        self.push(template, dest, if_exists, Output::Text, item);
        Ok(())
    }

    /// Adds a file from `template`, which renders JSON, written to `dest` as YAML after `header`.
    pub fn yaml_file(
        &mut self,
        template: &str,
        dest: impl Into<String>,
        if_exists: IfExists,
        header: &'static str,
    ) {
        let output = Output::YamlFromJson { header };
        self.push(template, dest, if_exists, output, None);
    }

    /// Adds a file from `template`, which renders JSON, written to `dest` as YAML after
    /// `header`; if `dest` exists, `merge` joins the rendered document into its own.
    pub fn yaml_merged(
        &mut self,
        template: &str,
        dest: impl Into<String>,
        header: &'static str,
        merge: Merge,
    ) {
        let output = Output::YamlMerged { header, merge };
        self.push(template, dest, IfExists::Overwrite, output, None);
    }

    /// Merges the JSON `template` renders, a part of a document, into `dest` with `merge`, if
    /// `dest` exists; else leaves it missing.
    pub fn yaml_patched(
        &mut self,
        template: &str,
        dest: impl Into<String>,
        header: &'static str,
        merge: Merge,
    ) {
        let output = Output::YamlPatched { header, merge };
        self.push(template, dest, IfExists::Overwrite, output, None);
    }

    fn push(
        &mut self,
        template: &str,
        dest: impl Into<String>,
        if_exists: IfExists,
        output: Output,
        item: Option<serde_json::Value>,
    ) {
        self.files.push(FileSpec {
            template: template.to_string(),
            dest: dest.into(),
            if_exists,
            output,
            item,
        });
    }

    /// Renders `dest`, a file an earlier plugin planned, from `template` instead (a plugin
    /// that specializes another's file, as kubebuilder's deploy-image does go/v4's). `false`
    /// when no file `dest` is planned.
    pub fn replace_template(&mut self, dest: &str, template: &str) -> bool {
        match self.files.iter_mut().find(|spec| spec.dest == dest) {
            Some(spec) => {
                spec.template = template.to_string();
                true
            }
            None => false,
        }
    }

    /// Deletes `dest`, if it exists.
    pub fn remove(&mut self, dest: impl Into<String>) {
        self.removed.push(dest.into());
    }

    /// Adds `dest` with `content` computed by the plugin, met like a template's file
    /// (`if_exists`).
    pub fn derived(&mut self, dest: impl Into<String>, content: String, if_exists: IfExists) {
        self.derived.push(Derived {
            dest: dest.into(),
            content,
            if_exists,
        });
    }

    /// Moves `from`, as it is, to `to`, if it exists.
    pub fn moved(&mut self, from: impl Into<String>, to: impl Into<String>) {
        self.moved.push((from.into(), to.into()));
    }

    /// Replaces `dest` with `content`, computed by the command.
    pub fn computed(&mut self, dest: impl Into<String>, content: String) {
        self.computed.push(Computed {
            dest: dest.into(),
            content,
        });
    }

    /// Adds `fragment` above `marker`'s line.
    pub fn insert(&mut self, marker: Marker, fragment: impl Into<String>) {
        self.insert_at(marker.file, marker.name, fragment);
    }

    /// Adds the fragment `template` renders (with the command's context and `vars`) above
    /// `marker`'s line.
    pub fn insert_template(&mut self, marker: Marker, template: &str, vars: &[(&str, &str)]) {
        let vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        self.inserts.push(Insert {
            file: marker.file.to_string(),
            marker: marker.name.to_string(),
            fragment: Fragment::Template {
                template: template.to_string(),
                vars: vars.collect(),
            },
        });
    }

    /// Adds `fragment` above the line of the marker `name` in `file`, a file whose path is
    /// computed (a group's or a version's module).
    pub fn insert_at(&mut self, file: impl Into<String>, name: &str, fragment: impl Into<String>) {
        self.inserts.push(Insert {
            file: file.into(),
            marker: name.to_string(),
            fragment: Fragment::Text(fragment.into()),
        });
    }
}
