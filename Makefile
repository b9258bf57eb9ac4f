# ucmfs — build, test, benchmark.
GO      ?= go
BIN     ?= bin/ucmfs
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
MNT     ?= $(CURDIR)/mnt
BENCHTIME ?= 1s
# make install: PREFIX for the binary, man page and unit; the mount
# helper goes where mount(8) looks for helpers (/sbin), under DESTDIR.
PREFIX    ?= /usr/local
DESTDIR   ?=
BINDIR    ?= $(PREFIX)/bin
HELPERDIR ?= /sbin
MANDIR    ?= $(PREFIX)/share/man
UNITDIR   ?= $(PREFIX)/lib/systemd/system

.PHONY: build test fuzz bench bench-anchor lint run clean install uninstall soak

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ucmfs

# The whole suite: vet, then every package's tests (mount tests included).
# internal/testprogress runs `go test -json` and prints each package as it
# finishes, with its time and the output of the tests that fail, and every
# 30 s the packages still running: tests ended of tests declared, time so
# far (integration, the longest, runs for minutes); `go test ./...` would
# hold every line back behind the slowest package before it in the list.
test:
	$(GO) vet ./...
	$(GO) run ./internal/testprogress -- -count=1 -timeout 20m ./...

# Fuzz every target for FUZZTIME (seed corpora in each package's
# testdata/fuzz/; what a run finds new stays in the Go cache). CI runs it
# after the tests: about 13 targets x FUZZTIME. A target that fails
# without writing a failing input to its testdata/fuzz/ is the Go fuzz
# coordinator's own race at the end of -fuzztime ("context deadline
# exceeded", go.dev/issue/75804, fixed in Go 1.27): it runs again, three
# times at most (twice in a row was seen in CI); a failing input fails at
# once.
FUZZTIME ?= 10s
FUZZ_TARGETS := format:FuzzDecodeBlockHeader format:FuzzDecodeReprHeader \
	control:FuzzLookup control:FuzzPrefetch control:FuzzFlush control:FuzzGPU control:FuzzTopk \
	sparse:FuzzDerive sparse:FuzzBuilderAdd \
	events/vllm:FuzzPubListener events/vllm:FuzzReplayListener cmd/ucmfs:FuzzMetricsListener
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; fn=$${t#*:}; ok=0; \
	  for try in 1 2 3; do \
	    echo "fuzz $$pkg $$fn ($(FUZZTIME), try $$try)"; \
	    if $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) ./$$pkg/; then ok=1; break; fi; \
	    if [ -n "$$(git status --porcelain -- ./$$pkg/testdata/fuzz/$$fn 2>/dev/null)" ]; then exit 1; fi; \
	    echo "fuzz $$pkg $$fn: failed with no failing input (the fuzz coordinator's deadline race)"; \
	  done; \
	  [ $$ok = 1 ] || exit 1; \
	done

# Benchmarks: every ratio is against a baseline measured in the same run.
# First every package's Go benchmarks (storage core, in-process FUSE),
# then the mount benchmarks of package bench (the real binary in its own
# process, beside tmpfs and the nvme directory, the targets in turn for
# MOUNT_ROUNDS rounds, medians taken) and the scale run of SCALE_BLOCKS
# blocks (10^6: it takes minutes; SCALE_BLOCKS=100000 for a quick one);
# internal/benchplot prints the table and draws docs/performance-mount.png.
# Outputs in BENCHOUT.
BENCHOUT     ?= bin/bench
MOUNT_ROUNDS ?= 3
SCALE_BLOCKS ?= 1000000
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -timeout 30m $$($(GO) list ./... | grep -v '/bench$$')
	mkdir -p $(BENCHOUT) && rm -f $(BENCHOUT)/mount.txt $(BENCHOUT)/scale.json $(BENCHOUT)/status
	( UCMFS_BENCH_ROUNDS=$(MOUNT_ROUNDS) $(GO) test -count=1 -run '^$$' -bench . -benchtime $(BENCHTIME) \
	  -timeout 30m ./bench/ 2>&1; \
	  echo $$? > $(BENCHOUT)/status ) | tee $(BENCHOUT)/mount.txt; exit $$(cat $(BENCHOUT)/status)
	UCMFS_SCALE=1 UCMFS_SCALE_BLOCKS=$(SCALE_BLOCKS) UCMFS_SCALE_OUT=$(CURDIR)/$(BENCHOUT)/scale.json UCMFS_BENCH_ROUNDS=$(MOUNT_ROUNDS) \
	  $(GO) test -count=1 -run '^TestScale$$' -v -timeout 30m ./bench/
	$(GO) run ./internal/benchplot -bench $(BENCHOUT)/mount.txt -scale $(BENCHOUT)/scale.json \
	  -png docs/performance-mount.png -md $(BENCHOUT)/mount.md

# The anchor's set (docs/performance.md, *Method*): per-op figures with
# p50/p99/max, 2 MiB reads, UCM's load, writes into a full tier, on the
# default mount beside libfuse's passthrough_hp (UCMFS_BENCH_PASSTHROUGH_HP,
# a binary built by hand; required here) and the raw directories. With
# UCMFS_BENCH_BIN_BEFORE set, that binary and this tree's are run in turn
# ANCHOR_RUNS times each (before, after, before, ...), MOUNT_ROUNDS rounds
# a run, and the tables give both, every ucmfs figure over passthrough_hp's
# of the same round. The load average is written before and after each
# run. FUSE over io_uring is measured where enable_uring is Y.
ANCHOR_BENCH ?= MountOpenClose|MountStatMiss|MountStatHitCold|MountGetattr|MountRead2MiB$$|MountWrite2MiB$$|UCMLoad2MiB
ANCHOR_RUNS  ?= 1
bench-anchor: build
	@test -n "$$UCMFS_BENCH_PASSTHROUGH_HP" || (echo "set UCMFS_BENCH_PASSTHROUGH_HP to a passthrough_hp binary"; exit 1)
	mkdir -p $(BENCHOUT) && rm -f $(BENCHOUT)/anchor-*.txt
	for i in $$(seq $(ANCHOR_RUNS)); do \
	  for run in $${UCMFS_BENCH_BIN_BEFORE:+before} after; do \
	    bin=$(CURDIR)/$(BIN); [ $$run = before ] && bin=$$UCMFS_BENCH_BIN_BEFORE; \
	    echo "# $$run $$bin load average $$(cat /proc/loadavg)" | tee -a $(BENCHOUT)/anchor-$$run.txt; \
	    UCMFS_BENCH_BIN=$$bin UCMFS_BENCH_ROUNDS=$(MOUNT_ROUNDS) $(GO) test -count=1 -run '^$$' \
	      -bench '$(ANCHOR_BENCH)' -benchtime $(BENCHTIME) -timeout 30m ./bench/ | tee -a $(BENCHOUT)/anchor-$$run.txt || exit 1; \
	    echo "# load average after $$(cat /proc/loadavg)" | tee -a $(BENCHOUT)/anchor-$$run.txt; \
	  done; \
	done
	$(GO) run ./internal/benchplot -anchor $${UCMFS_BENCH_BIN_BEFORE:+before=$(BENCHOUT)/anchor-before.txt,}after=$(BENCHOUT)/anchor-after.txt \
	  | tee $(BENCHOUT)/anchor.md

# The crash soaks: seeded random operations over a filesystem that fails
# and loses power, on a stack (tiers/soak_test.go) and on the store over
# it, through the calls the FUSE adapter makes (store/soak_test.go), each
# for SECONDS, one after the other; each prints its operations per second
# (and the load average), each open finding met, and a failing seed's
# replay. STRICT=1 fails on the open findings too. `make test` runs each
# for a few seconds.
SECONDS ?= 60
soak:
	UCMFS_SOAK_SECONDS=$(SECONDS) UCMFS_SOAK_STRICT=$(STRICT) $(GO) test -count=1 -p 1 -run '^(TestSoak|TestStoreSoak)$$' -v -timeout $$(( $(SECONDS) + 600 ))s ./tiers/ ./store/ 2>&1 \
	  | grep -vE '^\s{8}' | grep -E 'soak|^(ok|FAIL|---)'

lint:
	@test -z "$$(gofmt -l .)" || (echo "gofmt would change:"; gofmt -l .; exit 1)
	$(GO) vet ./...
	$(GO) test -count=1 -run 'TestImportDirection|TestErrnoInOnePlace|TestDesignMap' ./internal/lint/

# Mounts the embedded default (memory tier + a local spill directory) on ./mnt.
run: build
	mkdir -p $(MNT)
	$(BIN) mount $(MNT)

# Installs, under DESTDIR: the binary; the mount helper
# HELPERDIR/mount.fuse.ucmfs (a link to the binary, for mount -t fuse.ucmfs
# and fstab); the manual page ucmfs(8); the systemd unit ucmfs@.service.
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/ucmfs
	install -d $(DESTDIR)$(HELPERDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR)
	ln -sf $(BINDIR)/ucmfs $(DESTDIR)$(HELPERDIR)/mount.fuse.ucmfs
	$(BIN) man > $(DESTDIR)$(MANDIR)/man8/ucmfs.8
	sed 's|@BINDIR@|$(BINDIR)|g' deploy/ucmfs@.service > $(DESTDIR)$(UNITDIR)/ucmfs@.service
	chmod 0644 $(DESTDIR)$(MANDIR)/man8/ucmfs.8 $(DESTDIR)$(UNITDIR)/ucmfs@.service

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ucmfs $(DESTDIR)$(HELPERDIR)/mount.fuse.ucmfs \
	  $(DESTDIR)$(MANDIR)/man8/ucmfs.8 $(DESTDIR)$(UNITDIR)/ucmfs@.service

clean:
	rm -rf bin
