#!/usr/bin/env bash
# A STAND-IN for kubectl: no API server runs where the tests run. It records each call and its
# input in $STAND_IN_LOG, answers as a cluster that has the CRDs installed, and hands
# `kubectl kustomize` to the real kubectl (kustomize needs no server).
#   STAND_IN_STUCK=<plural.group>  objects of that resource keep a finalizer: deleting them
#                                  fails as kubectl does when --timeout runs out.
set -euo pipefail
log="${STAND_IN_LOG:?}"
# One line per call, appended (pipelines run their kubectls at once); what a call reads from
# standard input goes to stdin-<pid>.yaml, named on its line.
input="$log/stdin-$$.yaml"
printf '%s\t%s\n' "$*" "$input" >> "$log/calls.log"
case "$*" in
  kustomize\ *|*\ kustomize\ *)
    exec "${REAL_KUBECTL:-kubectl}" "$@" ;;
  get\ *-f\ -*)
    # The CRDs in the input, as `kubectl get -o name` prints installed objects.
    cat > "$input"
    sed -n 's/^  name: \(.*\)$/customresourcedefinition.apiextensions.k8s.io\/\1/p' "$input"
    ;;
  delete\ *-f\ -*)
    cat > "$input" ;;
  delete\ *)
    resource="$2"
    if [ "$resource" = "${STAND_IN_STUCK:-}" ]; then
      echo "error: timed out waiting for the condition on $resource/sample" >&2
      exit 1
    fi
    echo "No resources found" ;;
  apply\ *)
    cat > "$input" ;;
  *)
    echo "kubectl stand-in: unexpected call: $*" >&2
    exit 2 ;;
esac
