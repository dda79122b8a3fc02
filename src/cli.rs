//! The command line, as clap parses it. Raw flags only; `commands` validates them.

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

/// kubebuilder's workflow for Kubernetes operators written in Rust on kube-rs.
#[derive(Debug, Parser)]
#[command(
    name = "kube-scaffold",
    version,
    after_help = "Example:\n  mkdir guestbook && cd guestbook\n  kube-scaffold init --domain mock.com\n  kube-scaffold create api --group webapp --version v1 --kind Guestbook\n  make manifests install run"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lay out a new operator project in the current directory.
    #[command(
        after_help = "Example:\n  kube-scaffold init --domain mock.com --owner \"The Guestbook Authors\""
    )]
    Init(InitArgs),
    /// Add to the project: an API (`create api`).
    #[command(subcommand)]
    Create(CreateCommand),
    /// Commands that may still change: `alpha generate`.
    #[command(subcommand)]
    Alpha(AlphaCommand),
    /// Print kube-scaffold's version and the versions it scaffolds.
    #[command(after_help = "Example:\n  kube-scaffold version")]
    Version,
    /// Print a shell completion script.
    #[command(
        after_help = "Example:\n  kube-scaffold completion bash > /etc/bash_completion.d/kube-scaffold"
    )]
    Completion {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The domain of the project's API groups: `--group webapp` becomes `webapp.<domain>`.
    #[arg(long, default_value = "my.domain")]
    pub domain: String,
    /// The project's name (a DNS-1123 label) [default: the directory's name].
    #[arg(long)]
    pub project_name: Option<String>,
    /// The project's repository, for Cargo.toml: a URL, or a Go-style module path
    /// (`github.com/me/operator`) as kubebuilder's `--repo` takes it.
    #[arg(long)]
    pub repo: Option<String>,
    /// The copyright owner written into the license header.
    #[arg(long)]
    pub owner: Option<String>,
    /// The license header of generated sources.
    #[arg(long, value_enum, default_value_t = License::Apache2)]
    pub license: License,
    /// Print the files it would write; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand)]
pub enum AlphaCommand {
    /// Render the whole project again from its PROJECT file, into a new directory.
    #[command(
        after_help = "Example:\n  kube-scaffold alpha generate --output-dir ../guestbook-regenerated\n  diff -r . ../guestbook-regenerated"
    )]
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The project to read [default: the current directory]. It is never changed.
    #[arg(long)]
    pub input_dir: Option<std::path::PathBuf>,
    /// Where to write the project: a new or empty directory.
    #[arg(long)]
    pub output_dir: std::path::PathBuf,
}

/// License headers `init` can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum License {
    /// The Apache License 2.0 header.
    Apache2,
    /// No header.
    None,
}

#[derive(Debug, Subcommand)]
pub enum CreateCommand {
    /// Add a custom resource type and its controller.
    #[command(
        after_help = "Example:\n  kube-scaffold create api --group webapp --version v1 --kind Guestbook\n  kube-scaffold create api --group webapp --kind Cluster --namespaced=false --resource --controller"
    )]
    Api(CreateApiArgs),
}

#[derive(Debug, Args)]
pub struct CreateApiArgs {
    /// The API group, without the domain (e.g. `webapp`).
    #[arg(long)]
    pub group: String,
    /// The API version (e.g. `v1`, `v1alpha1`).
    #[arg(long, default_value = "v1")]
    pub version: String,
    /// The kind, in PascalCase (e.g. `Guestbook`).
    #[arg(long)]
    pub kind: String,
    /// Scaffold the resource type [default: ask on a terminal, else yes].
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set)]
    pub resource: Option<bool>,
    /// Scaffold the controller [default: ask on a terminal, else yes].
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = ArgAction::Set)]
    pub controller: Option<bool>,
    /// Whether the resource is namespaced; `--namespaced=false` makes it cluster-scoped.
    #[arg(long, num_args = 0..=1, require_equals = true, default_value_t = true, default_missing_value = "true", action = ArgAction::Set)]
    pub namespaced: bool,
    /// The resource's plural, when the English plural is not what you want.
    #[arg(long)]
    pub plural: Option<String>,
    /// Scaffold a controller with a finalizer, so that its `cleanup` runs before an object is
    /// deleted (for anything outside the cluster; owned objects need none).
    #[arg(long)]
    pub finalizer: bool,
    /// Overwrite the kind's files if they exist (files you edited are kept; see below).
    #[arg(long)]
    pub force: bool,
    /// With --force, also overwrite the kind's files you edited since they were scaffolded.
    #[arg(long, requires = "force")]
    pub overwrite_edited: bool,
    /// Print the files it would write and a diff of each change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}
