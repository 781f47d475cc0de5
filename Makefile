# meshbench. `make test` is what CI runs; `make bench` is the main job.
SHELL     := /bin/bash
GO        ?= go
PKGS      ?= ./...
BENCHFLAGS ?=
BENCHSTAT ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
# actionlint checks the workflows, and the shell of their run: steps with
# shellcheck (Debian's package shellcheck, which .ci/run installs; actionlint
# skips that part without it on PATH, so lint requires it).
ACTIONLINT ?= github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
SHELLCHECK ?= shellcheck
# Every script of hack/ and CI's entry point; -x -P SCRIPTDIR follows what
# they source (lib.sh, versions.env) beside them.
SCRIPTS   = $(wildcard hack/*.sh hack/offline/*.sh hack/ci/*.sh) .ci/run
# Istio's Helm charts, read from its Go module (the module proxy serves it
# where no chart repository is reachable), for the mesh-install e2e test:
# the 1.31-dev pseudo-version hack/offline/versions.env pins (istio.sh).
ISTIO_CHARTS ?= istio.io/istio@$(shell sed -n 's/^ISTIO_VERSION_131=//p' hack/offline/versions.env)
# Cilium: the agent and operator images are built offline from this module
# (hack/offline/cilium.sh), and its chart is read from it.
CILIUM_VERSION ?= $(shell sed -n 's/^CILIUM_VERSION=//p' hack/offline/versions.env)

.PHONY: test test-unit test-measure e2e e2e-cilium unit bench benchstat lint tools clean chart-modules

## test: build, vet and run every test: test-unit, then test-measure.
test: test-unit test-measure

# MEASURING: the packages whose tests measure real processes (a run beside
# another package's tests or a build is invalid: busy-machine). The other
# packages' tests assert on recorded data and parse what real programs
# print; they run side by side, and beside builds.
MEASURING ?= ./benchmarks ./cmd/meshbench ./framework/report ./framework/suite \
	./framework/testbed/local ./framework/testbed/kube ./framework/measure ./framework/load/ceiling

## test-unit: build and vet everything (vet type-checks every test), run
## the tests of the packages outside MEASURING in parallel, and build the
## caddy@VERSION sidecars a pull request's gate uses (TestBuildSidecarVersion,
## cached in $$MESHBENCH_CACHE; minutes cold). Safe beside builds. The
## MEASURING packages' test binaries are linked by test-measure, one action
## at a time (-p 1), never beside a run: linking every test binary here as
## well cost a minute warm (62 s, 2026-12-04) for links done again later.
test-unit: tools
	@start=$$(date +%s); \
	$(GO) build $(PKGS) && $(GO) vet $(PKGS) && \
	$(GO) test -count=1 -timeout 20m $$($(GO) list $(PKGS) | grep -vxF "$$($(GO) list $(MEASURING))") && \
	MESHBENCH_BUILD_VERSIONS=1 $(GO) test -count=1 -timeout 30m -run '^TestBuildSidecarVersion$$' ./framework/testbed/local; rc=$$?; \
	echo "make test-unit: $$(( $$(date +%s) - start ))s"; exit $$rc

## test-measure: the MEASURING packages' tests (lifecycle and short sweeps
## against real local processes), one package at a time, on a quiet machine.
test-measure:
	@start=$$(date +%s); \
	MESHBENCH_BUILD_VERSIONS=1 $(GO) test -p 1 -count=1 -timeout 30m $(MEASURING); rc=$$?; \
	echo "make test-measure: $$(( $$(date +%s) - start ))s"; exit $$rc

## e2e: the offline kind end-to-end run (needs root): starts dockerd and
## builds or reuses the kind node, nginx, loadgen and node CPU agent images
## and Istio's (hack/offline/e2e-images.sh; cached in $$MESHBENCH_CACHE), then
## runs its tests on one 3-node cluster, made by the first and deleted at the end:
## TestKindE2E sweeps both paths at c=1 and c=8, baseline against the
## bring-your-own sidecar mesh (the node CPU agent reading beside the node
## reads, within 5 % of them), then the loadgen placements, the backend's
## sidecar killed and the frontend's stopped (restart) mid-window, and
## checks fixtures/thresholds/kind.yaml; TestKindCandidateGateE2E: a
## +no-keepalive candidate must fail on sidecar CPU,
## then the same cluster through its kubeconfig with CPU from the kubelets,
## each window aligned to their refreshes, within 15 % of the nodes read
## beside them in the same run;
## hack/ci/mesh-release-e2e.sh runs mesh-upgrade.yml's mesh-release path
## with Istio proxyless (istiod and pilot-agent 1.31-dev, built offline,
## installed by -mesh-install; its scripts: images, store the reference,
## gate the candidate against it with -reference; A/A, so it must not
## fail), then TestMeshReleaseResults checks every run of both files:
## proxyless gRPC against plain gRPC, mTLS proven by SPIFFE identity,
## istiod's CPU measured (TestIstioProxylessKindE2E, the same at c=1 and
## c=8 on an install of its own, runs by hand: MESHBENCH_ISTIO_E2E=1);
## TestIstioCanaryGateE2E, the A/A gate on kind: an Istio canary, two
## istiod revisions of 1.31-dev side by side, proxyless at c=1 beside a
## plain-gRPC baseline, mTLS proven and istiod's CPU measured on every
## run, must not fail;
## TestMeshInstallOnCluster, through the cluster's kubeconfig, installs and
## uninstalls a stand-in mesh chart and Istio's own charts with the Helm
## installer.
e2e:
	@start=$$(date +%s); set -e; \
	hack/offline/e2e-images.sh; \
	nginx=$$(hack/offline/images.sh nginx | tail -n 1); \
	cluster=meshbench-e2e-$$$$; \
	trap '$(GO) run ./hack/offline/kindcluster down '"$$cluster"' 2>/dev/null || true; echo "make e2e: $$(( $$(date +%s) - '"$$start"' ))s"' EXIT; \
	MESHBENCH_KIND_E2E=1 MESHBENCH_KIND_CLUSTER=$$cluster MESHBENCH_KIND_KEEP=1 \
	MESHBENCH_NGINX_IMAGE=$$nginx MESHBENCH_LOADGEN_IMAGE=meshbench/mbloadgen:dev MESHBENCH_NODECPU_IMAGE=meshbench/mbnodecpu:dev \
		$(GO) test -count=1 -timeout 60m -run 'TestKindE2E$$|TestKindCandidateGateE2E$$' -v ./framework/suite; \
	hack/ci/mesh-release-e2e.sh $$cluster; \
	MESHBENCH_ISTIO_CANARY_E2E=1 MESHBENCH_KIND_CLUSTER=$$cluster MESHBENCH_KIND_KEEP=1 MESHBENCH_LOADGEN_IMAGE=meshbench/mbloadgen:dev \
		$(GO) test -count=1 -timeout 20m -run '^TestIstioCanaryGateE2E$$' -v ./framework/suite; \
	kubeconfig=$$($(GO) run ./hack/offline/kindcluster up $$cluster 2>/dev/null); \
	charts=$$($(GO) mod download -json $(ISTIO_CHARTS) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p')/manifests/charts; \
	MESHBENCH_KUBE_E2E=$$kubeconfig MESHBENCH_NGINX_IMAGE=$$nginx MESHBENCH_ISTIO_CHARTS=$$charts \
		$(GO) test -count=1 -timeout 20m -run TestMeshInstallOnCluster -v ./framework/testbed/kube

## e2e-cilium: Cilium's real data plane on kind, built offline (needs
## root; not in CI: the build adds ~15 minutes cold, and the CI kernel has
## no ESP transform, so IPsec cannot run there — see issue 11). Builds the
## agent and operator images (hack/offline/cilium.sh), then measures Cilium
## as the CNI of a 4-node cluster against a bridge-CNI baseline cluster,
## interleaved. CILIUM_ENCRYPTION=ipsec on a kernel with ESP.
CILIUM_ENCRYPTION ?= none
e2e-cilium:
	@start=$$(date +%s); set -e; \
	hack/offline/docker.sh; \
	hack/offline/node-image.sh; \
	nginx=$$(hack/offline/images.sh nginx | tail -n 1); \
	hack/offline/images.sh go meshbench/mbloadgen:dev ./cmd/mbloadgen >/dev/null; \
	hack/offline/cilium.sh >/dev/null; \
	cilium=$$($(GO) mod download -json github.com/cilium/cilium@$(CILIUM_VERSION) | sed -n 's/^\t"Dir": "\(.*\)",$$/\1/p')/install/kubernetes; \
	MESHBENCH_CILIUM_E2E=1 MESHBENCH_CILIUM_CHARTS=$$cilium MESHBENCH_CILIUM_ENCRYPTION=$(CILIUM_ENCRYPTION) \
	MESHBENCH_NGINX_IMAGE=$$nginx MESHBENCH_LOADGEN_IMAGE=meshbench/mbloadgen:dev \
		$(GO) test -count=1 -timeout 30m -run TestCiliumE2E -v ./framework/suite; \
	echo "make e2e-cilium: $$(( $$(date +%s) - start ))s"

## unit: the fast tests only (no processes started).
unit:
	$(GO) test -short -count=1 $(PKGS)

## tools: build the Caddy sidecar once (about 2 minutes cold, cached after).
tools:
	@start=$$(date +%s); $(GO) build -o /dev/null github.com/caddyserver/caddy/v2/cmd/caddy; \
	echo "caddy build: $$(( $$(date +%s) - start ))s"

## bench: the main job, saved for benchstat; a breach of the thresholds or
## a failed upgrade gate fails it (tee no longer hides go test's status).
bench:
	@mkdir -p results
	@set -o pipefail; $(GO) test ./benchmarks -run '^$$' -bench . -timeout 2h $(BENCHFLAGS) | tee results/bench.txt

## chart-modules: download the Go modules whose Helm charts and CRDs the
## mesh tests read (skipped without them).
chart-modules:
	@$(GO) mod download $(ISTIO_CHARTS) github.com/cilium/cilium@$(CILIUM_VERSION) sigs.k8s.io/gateway-api@v1.6.3

## benchstat: baseline against meshed, per concurrency.
benchstat:
	$(GO) run $(BENCHSTAT) -col /arm results/bench.txt

## lint: gofmt, go vet, staticcheck; shellcheck over every script of hack/
## and .ci/run; actionlint (with shellcheck) over .github/workflows.
lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	@command -v $(SHELLCHECK) >/dev/null || { echo "lint: $(SHELLCHECK) is not on PATH (Debian package shellcheck)"; exit 1; }
	$(SHELLCHECK) -x -P SCRIPTDIR $(SCRIPTS)
	$(GO) run $(ACTIONLINT) -shellcheck=$(SHELLCHECK)

clean:
	rm -rf results
