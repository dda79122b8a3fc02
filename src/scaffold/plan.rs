//! What a command wants written: files from templates and fragments inserted before markers.

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

/// One file rendered from a template.
#[derive(Clone, Debug)]
pub struct FileSpec {
    /// The template's path under `scaffolds/`.
    pub template: String,
    /// The destination, relative to the project root.
    pub dest: String,
    pub if_exists: IfExists,
}

/// A fragment inserted above the line `<comment> +kube-scaffold:scaffold:<marker>` of a file.
#[derive(Clone, Debug)]
pub struct Insert {
    pub file: String,
    pub marker: String,
    pub fragment: String,
}

/// Everything one command writes; contents are rendered and checked before anything is written.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub files: Vec<FileSpec>,
    pub inserts: Vec<Insert>,
}

impl Plan {
    /// Adds a file from `template` (a path under `scaffolds/`) to `dest`.
    pub fn file(&mut self, template: &str, dest: impl Into<String>, if_exists: IfExists) {
        self.files.push(FileSpec {
            template: template.to_string(),
            dest: dest.into(),
            if_exists,
        });
    }

    /// Adds `fragment` above the `marker` line of `file`.
    pub fn insert(&mut self, file: impl Into<String>, marker: &str, fragment: impl Into<String>) {
        self.inserts.push(Insert {
            file: file.into(),
            marker: marker.to_string(),
            fragment: fragment.into(),
        });
    }
}
