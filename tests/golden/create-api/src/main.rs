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

//! The manager: checks the cluster, serves health probes, metrics and webhooks, optionally waits to
//! lead, and runs every controller of this project until SIGTERM or Ctrl-C. It exits non-zero
//! when a controller stops on its own or leadership is lost, so that Kubernetes restarts it.

use clap::Parser;
use kube_scaffold_runtime::manager::{Options, init_tracing};

use guestbook::manager;

/// Runs the guestbook operator's controllers against the cluster of the current
/// kubeconfig (or the in-cluster config when it runs in a pod).
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The manager's flags, as kubebuilder's (`--help` lists them).
    #[command(flatten)]
    manager: Options,
    // TODO(user): flags of your own go here, read below.
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    init_tracing(args.manager.log_format);
    manager(args.manager).run().await
}
