# dgdr-operator — developer entry points.
SHELL := /usr/bin/env bash -o pipefail
ROOT := $(shell pwd)
BIN := $(ROOT)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
export KUBEBUILDER_ASSETS := $(BIN)
GO_TEST_FLAGS ?= -count=1 -timeout 30m
# sandbox-suite runs a suite's go test command with its output also in
# .test-output/<target>.log and, when it fails, repeats the failed tests' lines last, where a CI
# log's tail shows them.
sandbox-suite = mkdir -p $(CURDIR)/.test-output && { $(1) 2>&1 | tee $(CURDIR)/.test-output/$@.log; } || \
	{ rc=$$?; echo "=== $@ failed; failed tests:"; grep -E '^\s*--- FAIL|^FAIL|: FAIL' $(CURDIR)/.test-output/$@.log; exit $$rc; }
# The release version (VERSION file; `make release VERSION=v0.2.0` overrides it), the commit and
# its time, linked into every binary (internal/version). The build date is the commit's, not the
# clock's, so that the same commit builds the same bytes.
VERSION ?= $(shell cat $(ROOT)/VERSION)
COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
VERSION_PKG := github.com/dgdr-operator/dgdr-operator/internal/version
LDFLAGS := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).buildDate=$(BUILD_DATE)

.PHONY: all
all: build

##@ Tools

.PHONY: tools
tools: ## Build (or reuse) etcd, kube-apiserver, kubectl, helm, controller-gen and doc tools under bin/ from the Go module proxy.
	WITH_HELM=1 WITH_DOCS=1 hack/setup-k8s.sh

$(CONTROLLER_GEN):
	hack/setup-k8s.sh

##@ Upstream

UPSTREAM := $(BIN)/upstream

.PHONY: aiperf
aiperf: ## Create (or reuse) the pinned AIPerf venv bin/aiperf: the verification Job's load generator in the sandbox (hack/aiperf/install.sh).
	hack/aiperf/install.sh

.PHONY: upstream
upstream: ## Create (or reuse) the pinned upstream venv bin/upstream: the real aisimulate and ai-dynamo (hack/upstream/requirements.txt).
	hack/upstream/install.sh

##@ Generate

.PHONY: generate
generate: $(CONTROLLER_GEN) schema catalog ## Generate deepcopy code, the bundled AISimulate input schema and the GPU catalogue.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook configuration.
	$(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=./api/... output:crd:artifacts:config=config/crd/bases
	go run ./hack/crdconversion
	$(CONTROLLER_GEN) rbac:roleName=dgdr-operator paths=./internal/... output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) webhook paths=./internal/webhook/... output:webhook:artifacts:config=config/webhook
	go run ./hack/chartgen

.PHONY: chart-docs
chart-docs: ## Generate charts/dgdr-operator/README.md from values.yaml.
	WITH_DOCS=1 hack/setup-k8s.sh
	$(BIN)/helm-docs --chart-search-root charts --template-files=README.md.gotmpl >/dev/null 2>&1

.PHONY: schema
schema: upstream ## Regenerate the bundled AISimulate input schema from the real model (CoreRecommendationConfig in bin/upstream).
	$(UPSTREAM)/bin/python hack/upstream/gen_input_schema.py internal/aisimulate/schema/recommend-input.v1.schema.json

.PHONY: catalog
catalog: upstream ## Regenerate the GPU catalogue (internal/aisimulate/systems_generated.go) from the pinned AISimulate's systems (bin/upstream).
	go run ./hack/catalog -python $(UPSTREAM)/bin/python -o internal/aisimulate/systems_generated.go

CRD_REF_DOCS := $(BIN)/crd-ref-docs

$(CRD_REF_DOCS):
	WITH_DOCS=1 hack/setup-k8s.sh

.PHONY: api-docs
api-docs: $(CRD_REF_DOCS) ## Generate the API reference (docs/reference/api.md) from the Go types.
	$(CRD_REF_DOCS) --source-path=./api --config=hack/crd-ref-docs/config.yaml --renderer=markdown --output-path=docs/reference/api.md >/dev/null

.PHONY: layout
layout: ## Write README.md's package table from the packages' doc comments (fails on a package without one).
	go run ./hack/layout

.PHONY: rbac-doc
rbac-doc: ## Write docs/operate/security.md's table of the operator's rights from the RBAC markers' and the chart's rules and the comments above them (fails on one without).
	WITH_HELM=1 hack/setup-k8s.sh
	go run ./hack/rbacdoc

.PHONY: verify
verify: generate manifests schema catalog api-docs chart-docs layout rbac-doc ## Regenerate everything and fail on drift.
	gofmt -l $$(git ls-files '*.go') | (! grep .) || (echo "gofmt needed"; exit 1)
	git diff --exit-code -- api config internal/aisimulate/schema internal/aisimulate/systems_generated.go docs/reference docs/operate/security.md charts README.md || (echo "generated files drifted: run make generate manifests layout rbac-doc"; exit 1)
	@test -z "$$(git status --porcelain -- api config charts docs/reference internal/aisimulate/systems_generated.go)" || (git status --porcelain -- api config charts docs/reference internal/aisimulate/systems_generated.go; echo "untracked generated files"; exit 1)

##@ Build

.PHONY: build
build: ## Build all binaries into bin/ (stamped with VERSION, the commit and its date).
	go build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/... ./tools/aisim/cmd/... ./tools/sandbox/cmd/...

.PHONY: fmt
fmt:
	gofmt -w $$(git ls-files '*.go')

.PHONY: lint-api
lint-api: ## kube-api-linter on api/ (docs/develop/api-lint.md explains every exclusion).
	WITH_LINT=1 hack/setup-k8s.sh
	$(BIN)/golangci-lint-kube-api-linter run --config .golangci-kal.yml ./api/...

.PHONY: lint
lint: ## golangci-lint (.golangci.yml: errcheck, govet, staticcheck, unused, unparam, ineffassign, forbidigo, gci, ...), pinned, built into bin/.
	WITH_LINT=1 hack/setup-k8s.sh
	$(BIN)/golangci-lint-kube-api-linter run --config .golangci.yml ./...

.PHONY: lint-fix
lint-fix: ## Apply golangci-lint's fixes and formatters (gci import order).
	WITH_LINT=1 hack/setup-k8s.sh
	$(BIN)/golangci-lint-kube-api-linter run --config .golangci.yml --fix ./...

##@ Test

.PHONY: test
test: tools upstream ## Unit and integration tests against a real etcd + kube-apiserver, and the checks against the real upstream (bin/upstream).
	go test $(GO_TEST_FLAGS) ./...

.PHONY: help
help:
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-16s %s\n", $$1, $$2}'

##@ Image

IMG ?= dgdr-operator:dev
CONTAINER_TOOL ?= docker

.PHONY: image
image: ## Build the operator image from the Dockerfile (needs a container engine; `make images` needs none).
	$(CONTAINER_TOOL) build -t $(IMG) .

##@ Release

DIST := $(ROOT)/dist
# dgdr-release (tools/release) builds every artifact; its flags name the inputs.
RELEASE_TOOL = nice go run ./tools/release/cmd/dgdr-release --dist $(DIST) --version $(VERSION) \
	--helm $(BIN)/helm --cyclonedx-gomod $(CYCLONEDX_GOMOD)
CYCLONEDX_GOMOD := $(BIN)/cyclonedx-gomod
CHART_PACKAGE = $(DIST)/dgdr-operator-$(patsubst v%,%,$(VERSION)).tgz
CYCLONEDX_GOMOD_VERSION := v1.10.0

.PHONY: cyclonedx-gomod
cyclonedx-gomod: ## Build (or reuse) the pinned SBOM generator cyclonedx-gomod into bin/ from the Go module proxy.
	@$(CYCLONEDX_GOMOD) version 2>/dev/null | grep -F "$(CYCLONEDX_GOMOD_VERSION)" >/dev/null || \
		GOBIN=$(BIN) nice go install -trimpath -ldflags='-s -w' github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)

.PHONY: images
images: ## The operator image (linux/amd64, linux/arm64) as an OCI layout in dist/oci/dgdr-operator, without a container engine; reproducible.
	$(RELEASE_TOOL) image

.PHONY: test-image
test-image: images ## Check the built image: entrypoint, user, labels, platforms; run its amd64 binary as uid 65532; rebuild and compare digests.
	DGDR_IMAGE_LAYOUT=$(DIST)/oci/dgdr-operator go test -count=1 -timeout 20m -v -tags image -run '^TestBuiltImage' ./test/image/

.PHONY: cli
cli: ## dgdrctl archives for linux and darwin, amd64 and arm64, in dist/.
	$(RELEASE_TOOL) cli

.PHONY: sbom
sbom: cyclonedx-gomod ## A CycloneDX SBOM per image platform and per dgdrctl binary (after images and cli).
	$(RELEASE_TOOL) sbom

.PHONY: chart-package
chart-package: ## The Helm chart packaged into dist/ with version/appVersion from VERSION and the image pinned by digest (after images).
	WITH_HELM=1 hack/setup-k8s.sh
	$(RELEASE_TOOL) chart

.PHONY: release
release: ## Every release artifact into a clean dist/: image layout and archive, dgdrctl archives, SBOMs, chart, krew manifest, SHA256SUMS.
	rm -rf $(DIST)
	$(MAKE) images cli
	$(MAKE) sbom chart-package
	$(RELEASE_TOOL) krew
	rm -rf $(DIST)/build
	$(RELEASE_TOOL) sums
	@cat $(DIST)/SHA256SUMS

##@ kubectl plugin

.PHONY: install-plugin
install-plugin: ## Build dgdrctl and install it as the kubectl plugin kubectl-dgdr into $(PLUGIN_DIR).
	go build -o $(BIN)/dgdrctl ./cmd/dgdrctl
	install -D -m 0755 $(BIN)/dgdrctl $(PLUGIN_DIR)/kubectl-dgdr

PLUGIN_DIR ?= $(HOME)/.local/bin

##@ Sandbox

.PHONY: demo
RECOMMENDER ?= aisim

demo: ## The main command: start the sandbox (control plane, node agent, operator) and run the example searches (RECOMMENDER=aisimulate: with the real AISimulate).
	RECOMMENDER=$(RECOMMENDER) hack/demo.sh

.PHONY: test-e2e
test-e2e: ## End-to-end tests on the sandbox (starts it, or reuses a running one).
	go build -o $(BIN)/ ./tools/sandbox/cmd/dgdr-sandbox
	$(call sandbox-suite,DGDR_E2E=1 go test $(GO_TEST_FLAGS) -v -tags e2e ./test/e2e/...)

.PHONY: test-e2e-upstream
test-e2e-upstream: upstream ## The demo's searches on the sandbox with the real AISimulate (bin/upstream) instead of aisim.
	go build -o $(BIN)/ ./tools/sandbox/cmd/dgdr-sandbox
	$(call sandbox-suite,DGDR_E2E_UPSTREAM=1 go test -count=1 -timeout 75m -v -tags e2eupstream ./test/e2eupstream/...)

.PHONY: test-attack
test-attack: ## The attack suite on the sandbox: each hole of docs/operate/security.md tried from the attacker's side.
	go build -o $(BIN)/ ./tools/sandbox/cmd/dgdr-sandbox
	$(call sandbox-suite,DGDR_ATTACK=1 go test $(GO_TEST_FLAGS) -v -tags attack ./test/attack/...)

.PHONY: test-chart-install
test-chart-install: tools images chart-package ## Install the packaged chart into a sandbox without its own operator, its pinned image run from the built layout; check admission and reconciliation.
	go build -o $(BIN)/ ./tools/sandbox/cmd/dgdr-sandbox
	$(call sandbox-suite,DGDR_CHART_INSTALL=1 DGDR_CHART_PACKAGE=$(CHART_PACKAGE) DGDR_IMAGE_LAYOUT=$(DIST)/oci/dgdr-operator \
		go test $(GO_TEST_FLAGS) -v -tags chartinstall ./test/chartinstall/...)

.PHONY: test-ui
test-ui: ## Browser test of dgdrctl ui on the sandbox after the demo searches (headless Chromium, installed when missing); screenshots in .test-output/ui.
	go build -o $(BIN)/ ./tools/sandbox/cmd/dgdr-sandbox
	mkdir -p $(CURDIR)/.test-output/ui
	$(call sandbox-suite,DGDR_UI=1 go test $(GO_TEST_FLAGS) -v -tags ui -artifacts -outputdir $(CURDIR)/.test-output/ui ./test/ui/...)

.PHONY: sandbox-down
sandbox-down: ## Stop the sandbox and remove .sandbox/.
	@if [ -x $(BIN)/dgdr-sandbox ]; then $(BIN)/dgdr-sandbox down; fi

##@ Fuzzing

FUZZTIME ?= 60s
# Fuzzing runs on Go 1.27 (fetched from the module proxy by the go command): Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded" when a duration
# -fuzztime ends (golang/go#75804, fixed in 1.27 only). See docs/develop/fuzzing.md.
FUZZ_GOTOOLCHAIN ?= go1.27.3
FUZZ_TARGETS := \
	./cmd/dgdrctl/app/admitfuzz:FuzzAdmit \
	./internal/aisimulate:FuzzMergePatch \
	./internal/aisimulate:FuzzCheckInput \
	./internal/config:FuzzDecode \
	./internal/aisimulate/output:FuzzParseSweepResult \
	./internal/aisimulate/output:FuzzReadEvents \
	./internal/render:FuzzRender \
	./api/v1beta2:FuzzRoundTripV1Beta2 \
	./api/v1beta2:FuzzRoundTripV1Beta1

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (CI: 10s each; longer on demand, e.g. FUZZTIME=10m).
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$name ($$pkg) for $(FUZZTIME) with $(FUZZ_GOTOOLCHAIN)"; \
		GOTOOLCHAIN=$(FUZZ_GOTOOLCHAIN) go test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) 2>&1 | grep -v '^fuzz: elapsed' ; \
		test $${PIPESTATUS[0]} -eq 0; \
	done

##@ Chaos

.PHONY: test-chaos
test-chaos: ## Fault-injection scenarios on the sandbox (operator/reporter/API server kills, leader election); see docs/develop/chaos.md.
	go build -o $(BIN)/ ./tools/sandbox/cmd/dgdr-sandbox
	$(call sandbox-suite,DGDR_CHAOS=1 go test $(GO_TEST_FLAGS) -v -tags chaos ./test/chaos/...)

##@ Benchmarks

.PHONY: bench
bench: tools upstream aiperf ## Measure P1–P11 (docs/develop/performance.md, docs/design/aisim.md; P7b and P9 with the real AISimulate, P11 on the sandbox with the Dynamo mocker and AIPerf); ends with one comparable line per figure.
	go test -run '^$$' -bench . -benchmem ./internal/aisimulate/ ./internal/gpunodes/ ./tools/aisim/search/ ./test/bench/ 2>&1 | grep -E '^(Benchmark|ok|PASS)'
	go run ./test/bench

.PHONY: pareto-spread-picture
pareto-spread-picture: ## docs/images/pareto-spread.svg: the spread Pareto set of docs/design/reporter.md, drawn by output.SpreadFront's test.
	go test ./internal/aisimulate/output -run TestSpreadPicture -update-picture

.PHONY: aisim-calibration-plot
aisim-calibration-plot: ## aisim vs measured H100 runs: error table and docs/images/aisim-vs-silicon.svg (docs/design/aisim.md).
	mkdir -p docs/images
	go run ./tools/aisim/calibration/cmd/aisim-calibration -svg docs/images/aisim-vs-silicon.svg
