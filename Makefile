# ucmfs — build, test, benchmark.
GO      ?= go
BIN     ?= bin/ucmfs
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
MNT     ?= $(CURDIR)/mnt
BENCHTIME ?= 1s

.PHONY: build test bench lint run clean

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ucmfs

# The whole suite: vet, then every package's tests (mount tests included).
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

# Benchmarks: every ratio is against a baseline measured in the same run.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 30m ./...

lint:
	@test -z "$$(gofmt -l .)" || (echo "gofmt would change:"; gofmt -l .; exit 1)
	$(GO) vet ./...
	$(GO) test -count=1 -run TestImportDirection ./internal/lint/

# Mounts the embedded default (memory tier + a local spill directory) on ./mnt.
run: build
	mkdir -p $(MNT)
	$(BIN) mount $(MNT)

clean:
	rm -rf bin
