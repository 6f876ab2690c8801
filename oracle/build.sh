#!/usr/bin/env bash
# make oracle: builds etcd, kube-apiserver, kube-controller-manager and the Kueue manager from the
# Go modules pinned in oracle/*/go.mod into .oracle/bin/, and gathers the CRDs the testbed installs
# into .oracle/crds/, each from the very module version the programs were built from.
# Every version and why: oracle/README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${ORACLE_DIR:-$here/../.oracle}
mkdir -p "$out/bin" "$out/crds"
out=$(cd "$out" && pwd)

version_of() {  # version_of FOLDER MODULE: the version FOLDER's module builds with
  (cd "$here/$1" && go list -m -f '{{.Version}}' "$2")
}
dir_of() {  # dir_of FOLDER MODULE: that module's files in the module cache (downloaded if absent)
  (cd "$here/$1" && go mod download -json "$2" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
}
build() {  # build FOLDER PACKAGE NAME [LDFLAGS]
  local start=$SECONDS
  echo "oracle: building $3 from $2 ($1/go.mod)"
  (cd "$here/$1" && go build -trimpath -ldflags "${4:-}" -o "$out/bin/$3" "$2")
  echo "oracle: $3 built in $((SECONDS - start)) s"
}

etcd=$(version_of etcd go.etcd.io/etcd/server/v3)
build etcd go.etcd.io/etcd/server/v3 etcd

# Kubernetes programs report their version from ldflags; unstamped they say v0.0.0-master, and
# Kueue refuses to start against a server that reports it.
kube=$(version_of kube-apiserver k8s.io/kubernetes)
minor=${kube#v1.}; minor=${minor%%.*}
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$kube -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$kube_ldflags"
[ "$(version_of kube-controller-manager k8s.io/kubernetes)" = "$kube" ] || {
  echo "oracle: kube-apiserver and kube-controller-manager must pin the same k8s.io/kubernetes" >&2; exit 1; }
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager kube-controller-manager "$kube_ldflags"

kueue=$(version_of kueue sigs.k8s.io/kueue)
build kueue sigs.k8s.io/kueue/cmd/kueue kueue "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$kueue"

# CRDs, from the modules the Kueue build resolved (so they match the manager's types)
rm -f "$out"/crds/*.yaml
cp "$(dir_of kueue sigs.k8s.io/kueue)"/config/components/crd/bases/kueue.x-k8s.io_*.yaml "$out/crds/"
for spec in \
  "k8s.io/autoscaler/cluster-autoscaler/apis:config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml" \
  "sigs.k8s.io/jobset:config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml" \
  "github.com/kubeflow/training-operator:manifests/base/crds/kubeflow.org_pytorchjobs.yaml"; do
  mod=${spec%%:*}; file=${spec#*:}
  src="$(dir_of kueue "$mod")/$file"
  [ -f "$src" ] || { echo "oracle: $mod has no $file" >&2; exit 1; }
  cp "$src" "$out/crds/"
done
# Kueue's webhook configurations and the CRDs its release serves through the conversion webhook
kueue_dir=$(dir_of kueue sigs.k8s.io/kueue)
rm -rf "$out/kueue-config" && mkdir -p "$out/kueue-config/crd-patches"
cp "$kueue_dir/config/components/webhook/manifests.yaml" "$out/kueue-config/webhook-manifests.yaml"
cp "$kueue_dir"/config/components/crd/kustomization.yaml "$out/kueue-config/crd-patches/"
cp -r "$kueue_dir"/config/components/crd/patches "$out/kueue-config/crd-patches/"
chmod -R u+w "$out/crds" "$out/kueue-config"
{
  echo "etcd $etcd"
  echo "kube-apiserver $kube"
  echo "kube-controller-manager $kube"
  echo "kueue $kueue"
} > "$out/VERSIONS"
echo "oracle: built into $out/bin ($(tr '\n' ' ' < "$out/VERSIONS"))"
