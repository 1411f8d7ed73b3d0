# iocache — Makefile in kubebuilder's style. `make help` lists every target.

VERSION ?= 0.1.0
IMG ?= ghcr.io/iocache/iocache:v$(VERSION)
# The Kubernetes version of envtest, the local node and kubectl: set in one place, hack/envtest/go.mod.
K8S_VERSION := $(shell hack/k8s-binaries.sh version)

# Tools are pinned here and built into bin/ (or the user cache for the Kubernetes binaries) once.
HELM_VERSION ?= v3.22.0
KUSTOMIZE_VERSION ?= v5.8.2
GOLANGCI_LINT_VERSION ?= v2.15.0
GOTESTSUM_VERSION ?= v1.13.0
VERSITYGW_VERSION ?= v1.8.0
FUZZTIME ?= 30s

LOCALBIN ?= $(CURDIR)/bin
HELM ?= $(LOCALBIN)/helm
KUSTOMIZE ?= $(LOCALBIN)/kustomize
KUBECTL ?= $(LOCALBIN)/kubectl
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
GOTESTSUM ?= $(LOCALBIN)/gotestsum
VERSITYGW ?= $(LOCALBIN)/versitygw
CONTROLLER_GEN ?= go tool controller-gen
# The image as a tarball (make image), for clusters without a registry such as the local one.
IMAGE_TAR ?= $(LOCALBIN)/iocache-image.tar
# The platforms of the image index (make image-index, make docker-build).
PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_INDEX_TAR ?= $(LOCALBIN)/iocache-image-index.tar
comma := ,
# local: the single-node cluster of hack/local-cluster.sh; current: the current kubeconfig's cluster.
CLUSTER ?= local

K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
# Release builds of helm stamp its version and the Kubernetes version it assumes without a cluster
# (else 1.20, which the chart's kubeVersion refuses).
HELM_LDFLAGS := -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(K8S_MINOR) \
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$(K8S_MINOR)

GO_LDFLAGS := -s -w -X github.com/iocache/iocache/server/version.Version=$(VERSION)
BINARIES := manager iocache-server iocache-bench

# Setting SHELL to bash allows bash commands to be executed by recipes.
SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate CRDs and RBAC (config/crd/bases, config/rbac) and copy both into the Helm chart.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/..." paths="./controllers/..." output:crd:artifacts:config=config/crd/bases
	cp config/crd/bases/*.yaml charts/iocache/crds/
	sed -n '/^rules:/,$$p' config/rbac/role.yaml > charts/iocache/files/manager-rules.yaml

.PHONY: generate
generate: ## Generate DeepCopy methods for the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: dashboards
dashboards: ## Regenerate the Grafana dashboards in charts/iocache/dashboards from hack/dashboards/gen.py.
	python3 hack/dashboards/gen.py

.PHONY: redis-commands
redis-commands: ## Rewrite server/engine/redis_commands.resp (COMMAND INFO and DOCS) from the installed redis-server.
	go run ./hack/redis-commands

.PHONY: verify
verify: ## Fail when make manifests generate fmt dashboards would change a file (CI runs it first, on a fresh clone).
	hack/verify-generated.sh

.PHONY: fmt
fmt: ## Run gofmt over the module.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: test
test: manifests generate fmt vet envtest helm kustomize gotestsum versitygw ## Run every test: unit, Redis compatibility against Debian's tools, chart and operator against a real API server; nothing may be left behind.
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh kube-apiserver etcd | tail -n 1)" HELM="$(HELM)" KUSTOMIZE="$(KUSTOMIZE)" \
		VERSITYGW="$(VERSITYGW)" GOTESTSUM="$(GOTESTSUM)" hack/test.sh

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 30s); make test runs only their seed corpora.
	FUZZTIME="$(FUZZTIME)" hack/fuzz.sh

.PHONY: bench
bench: build versitygw ## Benchmark iocache-server against Debian's redis-server side by side (writes docs/benchmarks.md).
	@mkdir -p docs
	{ go test ./server/... -run '^$$' -bench 'HotPath|FindHit|Request' -benchmem -count 1 && \
	  go test ./server/engine -run '^$$' -bench 'ActiveExpire|EvictionPass|DelMillion' -benchtime 1x -count 1; } | tee docs/bench-go.txt
	go run ./hack/benchcmp $(BENCH_ARGS)
	go run ./hack/bgsavebench | tee docs/bench-bgsave.md # BGSAVE and BGREWRITEAOF, side by side
	go run ./hack/backupbench --versitygw $(VERSITYGW) | tee docs/bench-backup.md # backups: snapshot throughput, the primary's cost
	@if [ "$$(id -u)" = 0 ]; then go run ./hack/memcheck; else echo "memcheck skipped: it needs root to create a memory cgroup"; fi
	go run ./hack/memtypes --out docs/memory-types.md # every type's memory per key, side by side

.PHONY: bench-ceiling
bench-ceiling: build ## The main thread's share of a command's CPU with the I/O threads on, and the throughput ceiling it sets (writes docs/ceiling.md).
	@mkdir -p docs
	go run ./hack/benchcmp --ceiling --runs 5 --out docs/ceiling.md

.PHONY: bench-scaling
bench-scaling: build ## Requests/s against io-threads, iocache and redis-server each on half the CPUs and redis-benchmark on the rest (8+ CPUs; writes docs/scaling.md and .svg, or runs a smoke version on fewer).
	go run ./hack/benchcmp --scaling --runs 5 --out docs/scaling.md

.PHONY: bench-memory
bench-memory: build ## Memory per key and per element of every type, iocache-server against Debian's redis-server in one run (writes docs/memory-types.md).
	@mkdir -p docs
	go run ./hack/memtypes --out docs/memory-types.md

.PHONY: redis-testsuite
redis-testsuite: ## Run Redis 7.0.15's own test suite (fetched from Debian's source package) against iocache-server and Debian's redis-server (writes docs/redis-testsuite.md).
	hack/redis-testsuite.sh

.PHONY: fleet-bench
fleet-bench: ## The operator managing 1,000 CacheInstances on envtest: time to converge, passes/s, API requests per instance, peak memory (writes docs/bench-fleet.md).
	@mkdir -p docs
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh kube-apiserver etcd | tail -n 1)" go run ./hack/fleetbench $(FLEET_ARGS) | tee docs/bench-fleet.md

.PHONY: lint
lint: golangci-lint ## Run golangci-lint.
	$(GOLANGCI_LINT) run --allow-serial-runners ./...

##@ Build

.PHONY: build
build: ## Build manager, iocache-server and iocache-bench into bin/.
	@mkdir -p $(LOCALBIN)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/manager ./controllers/cmd/manager
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/iocache-server ./server/cmd/iocache-server
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/iocache-bench ./server/cmd/iocache-bench

.PHONY: run
run: build ## Run iocache-server on this machine with io-threads and cpulists chosen for its cores.
	$(LOCALBIN)/iocache-server --port 6379 --io-threads auto --server_cpulist auto --bio_cpulist auto

.PHONY: run-manager
run-manager: manifests generate ## Run the operator against the cluster in ~/.kube/config.
	go run ./controllers/cmd/manager

.PHONY: image
image: build ## Pack the three programs into an image tarball without Docker ($(IMAGE_TAR), tagged $(IMG)).
	go run ./hack/image -tag $(IMG) -out $(IMAGE_TAR) -entrypoint /usr/local/bin/manager -user 65532:65532 \
		-port 6379/tcp -port 9121/tcp -label org.opencontainers.image.source=https://github.com/iocache/iocache \
		-label org.opencontainers.image.licenses=Apache-2.0 -label org.opencontainers.image.version=$(VERSION) \
		$(LOCALBIN)/manager=/usr/local/bin/manager \
		$(LOCALBIN)/iocache-server=/usr/local/bin/iocache-server \
		$(LOCALBIN)/iocache-bench=/usr/local/bin/iocache-bench

.PHONY: image-index
image-index: ## Cross-compile for $(PLATFORMS) and pack one image index, an OCI layout tarball ($(IMAGE_INDEX_TAR)), without Docker.
	@set -e; for p in $(subst $(comma), ,$(PLATFORMS)); do \
	  for prog in manager=./controllers/cmd/manager iocache-server=./server/cmd/iocache-server iocache-bench=./server/cmd/iocache-bench; do \
	    echo "build $$p $${prog%%=*}"; \
	    CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/$${p%/*}-$${p#*/}/$${prog%%=*} $${prog#*=}; \
	  done; \
	done
	go run ./hack/image $(foreach p,$(subst $(comma), ,$(PLATFORMS)),-platform $(p)) -tag $(IMG) -out $(IMAGE_INDEX_TAR) \
		-entrypoint /usr/local/bin/manager -user 65532:65532 -port 6379/tcp -port 9121/tcp \
		-label org.opencontainers.image.source=https://github.com/iocache/iocache \
		-label org.opencontainers.image.licenses=Apache-2.0 -label org.opencontainers.image.version=$(VERSION) \
		'$(LOCALBIN)/{os}-{arch}/manager=/usr/local/bin/manager' \
		'$(LOCALBIN)/{os}-{arch}/iocache-server=/usr/local/bin/iocache-server' \
		'$(LOCALBIN)/{os}-{arch}/iocache-bench=/usr/local/bin/iocache-bench'

.PHONY: docker-build
docker-build: ## Build the image for $(PLATFORMS) with Docker Buildx (cross-compiled, no emulation); PLATFORMS=linux/amd64 for one.
	docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Build and push the image index for $(PLATFORMS).
	docker buildx build --platform $(PLATFORMS) --build-arg VERSION=$(VERSION) -t $(IMG) --push .

.PHONY: build-installer
build-installer: manifests generate kustomize ## Write dist/install.yaml: CRDs, RBAC and the operator Deployment.
	@mkdir -p dist
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default > dist/install.yaml

##@ Deployment

ifndef ignore-not-found
  ignore-not-found = false
endif

.PHONY: install
install: manifests kustomize ## Install the CRDs into the cluster in ~/.kube/config.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Remove the CRDs (and every CacheInstance with them).
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: deploy
deploy: manifests kustomize ## Deploy the operator with kustomize.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/default | kubectl apply --server-side -f -

.PHONY: undeploy
undeploy: kustomize ## Remove the operator deployed with kustomize.
	$(KUSTOMIZE) build config/default | kubectl delete --ignore-not-found=$(ignore-not-found) -f -

.PHONY: helm-lint
helm-lint: helm ## Lint the Helm chart.
	$(HELM) lint charts/iocache

##@ Local cluster and end to end

.PHONY: demo
demo: helm kubectl image ## Bring up a local cluster (or CLUSTER=current), install the operator with Helm, run a CacheInstance and show what it got.
	CLUSTER=$(CLUSTER) HELM=$(HELM) KUBECTL=$(KUBECTL) IMG=$(IMG) IMAGE_TAR=$(IMAGE_TAR) hack/demo.sh up

.PHONY: demo-down
demo-down: ## Undo make demo: the whole local cluster (or, with CLUSTER=current, the demo and the operator).
	CLUSTER=$(CLUSTER) HELM=$(HELM) KUBECTL=$(KUBECTL) hack/demo.sh down

.PHONY: test-e2e
test-e2e: helm kubectl image ## End-to-end test on a fresh local cluster (root): operator by Helm, CPUs, clients, rolls, GC, metrics, the README's commands; then down and a clean machine.
	HELM=$(HELM) IMG=$(IMG) IMAGE_TAR=$(IMAGE_TAR) hack/test-e2e.sh

.PHONY: cluster-up
cluster-up: ## Bring up the local single-node cluster (root): etcd, control plane, kubelet (static CPU manager), kube-proxy, containerd.
	hack/local-cluster.sh up

.PHONY: cluster-down
cluster-down: ## Remove the local cluster and everything it changed on this machine.
	hack/local-cluster.sh down

.PHONY: cluster-status
cluster-status: ## Show the local cluster's components and kubeconfig.
	hack/local-cluster.sh status

##@ Dependencies

.PHONY: envtest
envtest: ## Build kube-apiserver and etcd (K8S_VERSION) from the Go module proxy into ~/.cache/iocache, once.
	@hack/k8s-binaries.sh kube-apiserver etcd >/dev/null

.PHONY: kubectl
kubectl: ## Build kubectl (K8S_VERSION, the local node's) from the Go module proxy into ~/.cache/iocache, once, and link it as bin/kubectl.
	@mkdir -p $(LOCALBIN)
	@ln -sf "$$(hack/k8s-binaries.sh kubectl | tail -n 1)/kubectl" $(LOCALBIN)/kubectl

.PHONY: helm
helm: $(HELM) ## Build helm (HELM_VERSION) into bin/.
$(HELM):
	GOBIN=$(LOCALBIN) go install -ldflags '$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

.PHONY: versitygw
versitygw: $(VERSITYGW) ## Build versitygw (VERSITYGW_VERSION), the S3-compatible server the backup tests store into, into bin/.
$(VERSITYGW):
	GOBIN=$(LOCALBIN) go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Build kustomize (KUSTOMIZE_VERSION) into bin/.
$(KUSTOMIZE):
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Build golangci-lint (GOLANGCI_LINT_VERSION) into bin/.
$(GOLANGCI_LINT):
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: gotestsum
gotestsum: $(GOTESTSUM) ## Build gotestsum (GOTESTSUM_VERSION) into bin/: make test's runner and its summary of skipped tests.
$(GOTESTSUM):
	GOBIN=$(LOCALBIN) go install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)
