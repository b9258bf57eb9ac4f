package lint

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/ucmfs/ucmfs/"

// allowed lists, for each package of ours, the packages of ours it may
// import (non-test code): the arrows of docs/design.md's map, which
// TestDesignMap holds to the code. Dependencies flow one way, from
// cmd/ucmfs down to format; above store, only cmd/ucmfs (wiring)
// imports tiers.
var allowed = map[string][]string{
	"format":                  {},
	"layout":                  {"format"},
	"layout/ucmb":             {"format", "layout"},
	"layout/posix":            {"format", "layout"},
	"layout/files":            {"format", "layout"},
	"layout/registry":         {"format", "layout", "layout/ucmb", "layout/posix", "layout/files"}, // the one table of the layouts
	"tiers/index":             {"format", "internal/hashtab"},
	"tiers/rootfs":            {},
	"tiers/rootfs/crashfs":    {"tiers/rootfs"}, // test support: a filesystem that fails and loses power
	"tiers/rootfs/memfs":      {"tiers/rootfs"}, // test support: a filesystem in memory, memfd files
	"tiers/rootfs/rootfstest": {"tiers/rootfs"}, // test support: one table every rootfs.FS answers as Root does
	"tiers/tier":              {"format", "tiers/index", "tiers/rootfs", "layout/registry"},
	"tiers/mem":               {"format", "tiers/index", "tiers/rootfs", "tiers/tier"},
	"tiers/dir":               {"format", "tiers/index", "tiers/rootfs", "tiers/tier", "layout/registry"},
	"tiers":                   {"format", "tiers/index", "tiers/rootfs", "tiers/tier", "tiers/mem", "tiers/dir", "layout/registry"},
	"sparse":                  {"format"},
	"hybrid":                  {"format"},
	"gpu":                     {},
	"gpu/fdpass":              {},
	"events":                  {"format", "layout/registry"},
	"events/vllm":             {"format", "events", "internal/connlimit"},
	"store":                   {"format", "layout", "layout/registry", "tiers", "sparse", "gpu", "hybrid", "events"},
	"control/line":            {"format"},
	"transfer":                {"format", "layout/registry", "gpu", "gpu/fdpass", "store", "control/line"},
	"control":                 {"format", "sparse", "hybrid", "store", "control/line", "transfer", "events", "gpu"},
	"metrics":                 {"store"},
	"fs/light":                {"format", "internal/hashtab"},
	"fs/ino":                  {"format", "layout/registry"},
	"fs/uring":                {},
	"fs/conn":                 {"fs/light", "fs/uring"},
	"fs/scratch":              {"fs/ino", "vfs"},
	"fs/ucmdir":               {"control", "control/line", "store", "vfs"},
	"fs/pending":              {"format", "store", "vfs"},
	"fs/filesdir":             {"format", "fs/ino", "fs/pending", "store", "vfs"},
	"vfs":                     {"format", "layout", "layout/registry", "store", "fs/ino", "gpu"},                                                                                                                                          // the adapter's kernel-agnostic half
	"fs":                      {"format", "layout", "layout/registry", "gpu", "store", "control", "control/line", "transfer", "fs/light", "fs/ino", "fs/uring", "fs/conn", "fs/scratch", "fs/ucmdir", "fs/pending", "fs/filesdir", "vfs"}, // gpu, transfer: their sentinels in the errno table
	"cmd/ucmfs":               {"format", "layout/registry", "tiers", "gpu", "store", "metrics", "fs", "internal/ratelog", "internal/connlimit", "events/vllm"},                                                                           // tiers: wiring only
	"internal/faultfs":        {},
	"internal/tiertest":       {"format", "tiers"},      // test support: stacks over real directories
	"internal/blocktest":      {"format", "tiers/tier"}, // test support: blocks and files for the tiers' own tests
	"internal/soaktest":       {"tiers/rootfs/crashfs"}, // test support: what the crash soaks share
	"internal/engine":         {"gpu/fdpass"},           // test support: a stand-in engine process
	"internal/ucmproto":       {},
	"internal/engineproto":    {},
	"internal/lint":           {},
	"internal/ratelog":        {},
	"internal/connlimit":      {},
	"internal/hashtab":        {},
	"integration":             {"format", "hybrid", "internal/engineproto", "internal/faultfs", "internal/ucmproto"},

	// The mount benchmarks (test files and a doc) and their plotting tool.
	"bench":              {"format", "internal/engineproto", "internal/ucmproto"},
	"internal/benchplot": {},

	// make test's runner.
	"internal/testprogress": {},
}

// restricted third-party imports and the only packages that may use them.
var restricted = map[string][]string{
	"github.com/hanwen/go-fuse/v2":         {"fs", "fs/light", "fs/uring", "fs/conn", "fs/scratch", "fs/ucmdir", "fs/pending", "fs/filesdir", "internal/faultfs"},
	"github.com/urfave/cli/v3":             {"cmd/ucmfs"},
	"github.com/prometheus/client_golang/": {"metrics"},
	"github.com/go-zeromq/zmq4":            {"events/vllm"},
	"github.com/vmihailenco/msgpack/v5":    {"events/vllm"},
}

// imports returns, for each package of the module (relative to mod), the
// packages its non-test code imports, as go list reports them.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkgs[strings.TrimPrefix(fields[0], mod)] = fields[1:]
	}
	return pkgs
}

func TestImportDirection(t *testing.T) {
	for pkg, imps := range imports(t) {
		ok, known := allowed[pkg]
		if !known {
			t.Errorf("package %s has no entry in the import rules of internal/lint", pkg)
			continue
		}
		for _, imp := range imps {
			if strings.HasPrefix(imp, mod) {
				dep := strings.TrimPrefix(imp, mod)
				if !contains(ok, dep) {
					t.Errorf("%s imports %s: not allowed (allowed: %v)", pkg, dep, ok)
				}
				continue
			}
			for prefix, users := range restricted {
				if strings.HasPrefix(imp, prefix) && !contains(users, pkg) {
					t.Errorf("%s imports %s: only %v may", pkg, imp, users)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
