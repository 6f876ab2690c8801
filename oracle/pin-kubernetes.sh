#!/usr/bin/env bash
# Pins k8s.io/kubernetes at one release in the module of the current folder, for a program built
# from it (kube-apiserver, kube-controller-manager).
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/apiserver, ...) at v0.0.0 and
# finds them through replace directives to ./staging/src/..., which the go command ignores in a
# dependency. So this module replaces each of them with the matching published release
# (Kubernetes v1.X.Y <-> v0.X.Y). The list is read from that release's own go.mod, never guessed.
#
# usage: cd oracle/kube-apiserver && ../pin-kubernetes.sh v1.36.3 k8s.io/kubernetes/cmd/kube-apiserver
set -euo pipefail
version=${1:?kubernetes version, e.g. v1.36.3}
tool=${2:?package to build, e.g. k8s.io/kubernetes/cmd/kube-apiserver}
staging_version="v0.${version#v1.}"
gomod=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
[ -f "$gomod" ] || { echo "pin-kubernetes: no go.mod for k8s.io/kubernetes@${version}" >&2; exit 1; }
staging=$(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/src/.*#\1#p' "$gomod")
[ -n "$staging" ] || { echo "pin-kubernetes: ${gomod} lists no staging replacements" >&2; exit 1; }
args=()
for m in $staging; do args+=("-replace=${m}=${m}@${staging_version}"); done
go mod edit "${args[@]}"
go mod edit -require="k8s.io/kubernetes@${version}" -tool="${tool}"
go mod tidy
echo "pinned k8s.io/kubernetes ${version} and $(echo "$staging" | wc -l) staging modules at ${staging_version}"
