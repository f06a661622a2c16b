# Tailor — everything a machine needs is installed by these targets; only Go is assumed.
GO        ?= go
BIN       := $(CURDIR)/bin
KWOK      := $(BIN)/kwok
KWOK_VERSION := v0.7.0
NODEADM   := $(BIN)/nodeadm
# nodeadm (the AL2023 node bootstrap) at the commit the proxy serves; the node agent validates
# every simulated instance's user data with it.
NODEADM_VERSION := v0.0.0-20240229193347-cfab22a10647
HELM      := $(BIN)/helm
HELM_VERSION := v3.21.4
# The vanilla kube-scheduler of the k8s.io/kubernetes module Tailor is built on, for bench-e2e.
KUBE_SCHEDULER := $(BIN)/kube-scheduler
# The IAM policy simulator (npm, test only): pkg/sim/iamcheck runs hack/iam-simulate with node.
IAMSIM    := hack/iam-simulate/node_modules/.package-lock.json
# terraform only formats here (fmt needs no provider); the machines have it in /usr/local/bin.
TERRAFORM ?= terraform
CHART     := manifests/charts/tailor
# The PodGroup CRD of the scheduler-plugins module go.mod pins, which Coscheduling reads.
PODGROUP_CRD := config/crd/bases/scheduling.x-k8s.io_podgroups.yaml
# The image (make image): IMAGE_REPO:VERSION, VERSION being what git describe says of the tree
# without the tag's v (the git tag v0.1.0 builds 0.1.0, the chart's appVersion), a commit after it
# 0.1.0-3-gabc1234, uncommitted changes -dirty: the chart pulls a -dirty tag Always, as it may be
# pushed again with other contents.
VERSION   ?= $(or $(patsubst v%,%,$(shell git describe --tags --always --dirty 2>/dev/null)),dev)
IMAGE_REPO ?= tailor-scheduler
IMAGE     ?= $(IMAGE_REPO):$(VERSION)
# Both architectures EKS nodes run on: an image built on an Apple-silicon Mac alone fails on x86
# nodes. The Go compiler cross-compiles, so no emulation is needed.
PLATFORMS ?= linux/amd64,linux/arm64
# IMAGE_PUSH=1 pushes the image to IMAGE's registry. Otherwise it is loaded into the local Docker,
# which holds an image of several platforms only with the containerd image store (Docker Desktop's
# default); PLATFORMS=linux/amd64 loads one platform into any Docker.
IMAGE_PUSH ?=
CODEGEN_VERSION := v0.34.5
RUN_ARGS  ?=
TEST_TIMEOUT ?= 25m

.PHONY: all build test unit integration fuzz test-race run bench bench-e2e lint tools manifests image codegen clean

all: build

## build: the scheduler binary and the sandbox into ./bin
build:
	$(GO) build -o $(BIN)/tailor-scheduler ./cmd/scheduler
	$(GO) build -o $(BIN)/tailor-sandbox ./cmd/sandbox

## tools: kwok (the kubelet stand-in), nodeadm (the AL2023 bootstrap) and helm built from their Go modules into ./bin,
## and the IAM policy simulator's npm packages (needs Node.js 20) for the policy tests
tools: $(KWOK) $(NODEADM) $(HELM) $(IAMSIM)

$(KWOK):
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

$(NODEADM):
	GOBIN=$(BIN) $(GO) install github.com/awslabs/amazon-eks-ami/nodeadm/cmd/nodeadm@$(NODEADM_VERSION)

$(HELM):
	GOBIN=$(BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# npm ci writes node_modules/.package-lock.json last: it stands for a finished install, redone
# when the lock file changes.
$(IAMSIM): hack/iam-simulate/package-lock.json hack/iam-simulate/package.json
	npm ci --prefix hack/iam-simulate --no-audit --no-fund

## manifests: copy the PodGroup CRD from scheduler-plugins and the CRDs into the chart, and render
## manifests/deploy/tailor.yaml from it (manifests/chart_test.go fails until all are current)
manifests: $(HELM)
	cp "$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins)/$(PODGROUP_CRD)" manifests/crds/ && chmod 644 manifests/crds/$(notdir $(PODGROUP_CRD))
	mkdir -p $(CHART)/crds && rm -f $(CHART)/crds/*.yaml && cp manifests/crds/*.yaml $(CHART)/crds/
	$(HELM) template tailor $(CHART) --namespace kube-system -f manifests/deploy/values.yaml > manifests/deploy/tailor.yaml.tmp
	mv manifests/deploy/tailor.yaml.tmp manifests/deploy/tailor.yaml

## image: the scheduler's image for PLATFORMS, tagged IMAGE; IMAGE_PUSH=1 pushes it (needs Docker with buildx)
image:
	docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) -t $(IMAGE) \
	  $(if $(filter 1 true yes,$(IMAGE_PUSH)),--push,--load) .

# Fuzz targets, package:function. `make test` runs each for FUZZ_SMOKE executions (a count, not a
# duration: see hack/fuzz.sh for why), `make fuzz` for FUZZTIME. The slow ones load the whole
# catalog through the SDK in every execution (about 1 s each), so their smoke run is shorter.
FUZZ_TARGETS := ./pkg/workload:FuzzRead ./apis/config/scheme:FuzzDecodeAndValidate \
  ./pkg/cloud/ec2:FuzzUserData
FUZZ_SLOW_TARGETS := ./pkg/cloud/ec2:FuzzProviderReplies
FUZZ_SMOKE      ?= 2000x
FUZZ_SMOKE_SLOW ?= 40x
FUZZTIME        ?= 2m
FUZZTIME_SLOW   ?= $(FUZZTIME)

## test: lint, unit tests with the race detector, integration tests on a real control plane, and a
## few thousand executions of each fuzz target (a few dozen of the slow ones)
test: lint tools
	$(GO) test -count=1 -race -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v /test/integration)
	GO=$(GO) hack/integration.sh -timeout $(TEST_TIMEOUT) ./test/integration/...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZ_SMOKE) FUZZTIME_SLOW=$(FUZZ_SMOKE_SLOW)

## fuzz: each fuzz target for FUZZTIME (default 2m; a count such as 5000x works too); a failing
## input lands in the package's testdata/fuzz and runs as a test from then on
fuzz:
	GO=$(GO) hack/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)
	GO=$(GO) hack/fuzz.sh $(FUZZTIME_SLOW) $(FUZZ_SLOW_TARGETS)

## test-race: the integration tests with the race detector (slower; not part of make test: with
## k8s.io/kubernetes v1.34.7 it reports upstream races in kube-scheduler's nominator, fixed by
## kubernetes/kubernetes#140253, and in the garbage collector)
test-race: tools
	$(GO) test -count=1 -race -timeout 45m -v ./test/integration/...

## unit: tests that need no control plane (manifests/ runs helm, pkg/sim/iamcheck the IAM simulator)
unit: $(HELM) $(IAMSIM)
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /test/integration)

## integration: only the control-plane tests
integration: tools
	GO=$(GO) hack/integration.sh -timeout $(TEST_TIMEOUT) ./test/integration/...

## run: the sandbox — control plane, EC2 simulator, kwok, Tailor's scheduler and a sample workload
run: tools build
	$(BIN)/tailor-sandbox --scheduler $(BIN)/tailor-scheduler --kwok $(KWOK) --nodeadm $(NODEADM) $(RUN_ARGS)

## bench: Go benchmarks of the planner
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

## kube-scheduler: the vanilla kube-scheduler built from the same k8s.io/kubernetes module, into ./bin
$(KUBE_SCHEDULER): go.mod go.sum
	$(GO) build -o $@ k8s.io/kubernetes/cmd/kube-scheduler

# The bursts make bench-e2e runs, one run (a fresh cluster) each; BURST=file runs one of your own.
BURSTS       ?= hack/bench-e2e/burst-1000.yaml hack/bench-e2e/burst-5000.yaml hack/bench-e2e/controllers.yaml \
  hack/bench-e2e/gangs.yaml
BURST        ?=
FIT_EXISTING ?= 2000
BENCH_E2E_ARGS ?=

## bench-e2e: the sandbox's cluster under each burst (BURST=file for one; default $(BURSTS)) and pods that
## fit existing nodes scheduled by Tailor and by the vanilla kube-scheduler (FIT_EXISTING pods each, 0 to
## skip); one JSON object per burst on stdout (use make -s), progress on stderr
bench-e2e: $(KWOK) $(NODEADM) $(KUBE_SCHEDULER)
	$(GO) build -o $(BIN)/tailor-scheduler ./cmd/scheduler
	$(GO) build -o $(BIN)/tailor-bench-e2e ./cmd/bench-e2e
	@status=0; for burst in $(or $(BURST),$(BURSTS)); do \
	  $(BIN)/tailor-bench-e2e --burst $$burst --scheduler $(BIN)/tailor-scheduler --kube-scheduler $(KUBE_SCHEDULER) \
	    --kwok $(KWOK) --nodeadm $(NODEADM) --fit-existing $(FIT_EXISTING) $(BENCH_E2E_ARGS) || status=1; \
	done; exit $$status

## lint: gofmt, go vet, helm lint of the chart and terraform fmt of manifests/terraform
lint: $(HELM)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(HELM) lint --strict $(CHART) --set settings.clusterName=lint --set nodeInstanceProfile=lint
	$(TERRAFORM) fmt -check -recursive manifests/terraform

## codegen: regenerate deepcopy, conversion and defaults for apis/, and the Claim's clients in pkg/generated
codegen:
	GOBIN=$(BIN) $(GO) install k8s.io/code-generator/cmd/deepcopy-gen@$(CODEGEN_VERSION) \
	  k8s.io/code-generator/cmd/conversion-gen@$(CODEGEN_VERSION) k8s.io/code-generator/cmd/defaulter-gen@$(CODEGEN_VERSION) \
	  k8s.io/code-generator/cmd/client-gen@$(CODEGEN_VERSION) k8s.io/code-generator/cmd/lister-gen@$(CODEGEN_VERSION) \
	  k8s.io/code-generator/cmd/informer-gen@$(CODEGEN_VERSION)
	BIN=$(BIN) hack/update-codegen.sh

clean:
	rm -rf $(BIN) hack/iam-simulate/node_modules
