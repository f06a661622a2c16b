#!/usr/bin/env bash
# Regenerates deepcopy, conversion and defaulting code for the API packages.
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
