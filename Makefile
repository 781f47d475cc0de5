# meshbench. `make test` is what CI runs; `make bench` is the main job.
GO        ?= go
PKGS      ?= ./...
BENCHFLAGS ?=
BENCHSTAT ?= golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: test unit bench benchstat lint tools clean

## test: build, vet and run every test: unit tests on recorded data, then the
## lifecycle and short-sweep tests against real local processes.
test: tools
	@start=$$(date +%s); \
	$(GO) build $(PKGS) && $(GO) vet $(PKGS) && \
	$(GO) test -count=1 -timeout 30m $(PKGS); rc=$$?; \
	echo "make test: $$(( $$(date +%s) - start ))s"; exit $$rc

## unit: the fast tests only (no processes started).
unit:
	$(GO) test -short -count=1 $(PKGS)

## tools: build the Caddy sidecar once (about 2 minutes cold, cached after).
tools:
	@start=$$(date +%s); $(GO) build -o /dev/null github.com/caddyserver/caddy/v2/cmd/caddy; \
	echo "caddy build: $$(( $$(date +%s) - start ))s"

## bench: the main job, saved for benchstat.
bench:
	@mkdir -p results
	$(GO) test ./benchmarks -run '^$$' -bench . -timeout 2h $(BENCHFLAGS) | tee results/bench.txt

## benchstat: baseline against meshed, per concurrency.
benchstat:
	$(GO) run $(BENCHSTAT) -col /arm results/bench.txt

## lint: gofmt, go vet and staticcheck.
lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

clean:
	rm -rf results
