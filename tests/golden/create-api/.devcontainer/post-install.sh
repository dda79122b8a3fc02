#!/usr/bin/env bash
# Installs what `make test-e2e` needs beside the image's Rust, Docker and kubectl: kind.
set -euo pipefail

KIND_VERSION=v0.33.0

rustup component add clippy rustfmt
arch=$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')
curl -fsSLo /tmp/kind "https://kind.sigs.k8s.io/dl/${KIND_VERSION}/kind-linux-${arch}"
sudo install -m 0755 /tmp/kind /usr/local/bin/kind
rm /tmp/kind
kind version
docker network create -d=bridge --subnet=172.19.0.0/24 kind 2>/dev/null || true
