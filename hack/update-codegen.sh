#!/usr/bin/env bash
# Regenerates deepcopy, conversion and defaulting code for the API packages, and the Claim's typed
# clientset, listers and informers under pkg/generated.
# The generators come from k8s.io/code-generator through the Go module proxy (make codegen-tools).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-$PWD/bin}
HDR=hack/boilerplate.go.txt
"$BIN/deepcopy-gen" --go-header-file "$HDR" --output-file zz_generated.deepcopy.go \
  ./apis/config ./apis/config/v1 ./apis/tailor/v1alpha1
"$BIN/conversion-gen" --go-header-file "$HDR" --output-file zz_generated.conversion.go \
  --extra-peer-dirs k8s.io/api/core/v1 ./apis/config/v1
"$BIN/defaulter-gen" --go-header-file "$HDR" --output-file zz_generated.defaults.go ./apis/config/v1

MOD=github.com/tailor-eks/tailor
rm -rf pkg/generated
"$BIN/client-gen" --go-header-file "$HDR" --clientset-name versioned --input-base "" \
  --input "$MOD/apis/tailor/v1alpha1" --output-dir pkg/generated/clientset --output-pkg "$MOD/pkg/generated/clientset"
"$BIN/lister-gen" --go-header-file "$HDR" --output-dir pkg/generated/listers --output-pkg "$MOD/pkg/generated/listers" \
  ./apis/tailor/v1alpha1
"$BIN/informer-gen" --go-header-file "$HDR" --output-dir pkg/generated/informers --output-pkg "$MOD/pkg/generated/informers" \
  --versioned-clientset-package "$MOD/pkg/generated/clientset/versioned" --listers-package "$MOD/pkg/generated/listers" \
  ./apis/tailor/v1alpha1
