package integration

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkSharedLookup measures what revalidation costs a batch lookup
// (.ucm/lookup, 10k ids a request) of the real daemon: the same blocks on
// an nfs tier (shard directories checked every 100 ms: half the 200 ms
// negative TTL) and, the baseline in the same run, on an nvme tier (no
// revalidation). All present ("prefix"), and half absent ("exists"): an
// absent id costs a stat of the shared directory, a miss on nvme nothing.
func BenchmarkSharedLookup(b *testing.B) {
	present := testIDs("bench-present", benchBatch)
	absent := testIDs("bench-absent", benchBatch/2)
	var mixed []string
	for i := range absent {
		mixed = append(mixed, present[i], absent[i])
	}
	plant := func(dir string) {
		makeShards(b, dir, ctlModel, present)
		for _, id := range present {
			if err := os.WriteFile(blockPath(dir, ctlModel, id), goodBlock(id), 0o444); err != nil {
				b.Fatal(err)
			}
		}
		past := time.Now().Add(-time.Hour) // settled shard directories, as in a running cluster
		filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				os.Chtimes(p, past, past)
			}
			return nil
		})
	}
	shared, local := filepath.Join(testDir(b), "share"), filepath.Join(testDir(b), "local")
	plant(shared)
	plant(local)
	daemons := map[string]*daemon{
		"nfs":  mountUCM(b, sharedMount("nfs:"+shared)),
		"nvme": mountUCM(b, sharedMount("nvme:"+local)),
	}
	buf := make([]byte, 64<<10)
	for _, kind := range []string{"nvme", "nfs"} {
		d := daemons[kind]
		f, err := os.OpenFile(d.path(".ucm", "lookup"), os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		ask := func(b *testing.B, req, want string) {
			if _, err := f.WriteString(req); err != nil {
				b.Fatal(err)
			}
			n, err := f.Read(buf)
			if err != nil || n < len(want) || string(buf[:len(want)]) != want {
				b.Fatalf("%s: answer %q, %v", kind, buf[:min(n, 80)], err)
			}
		}
		for _, c := range []struct{ name, req, want string }{
			{"prefix-present", "prefix " + ctlModel + " " + strings.Join(present, " ") + "\n", "ok 10000\n"},
			{"exists-mixed", "exists " + ctlModel + " " + strings.Join(mixed, " ") + "\n", "ok 5000 10"},
		} {
			ask(b, c.req, c.want) // the index warm
			b.Run(kind+"/"+c.name, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					ask(b, c.req, c.want)
				}
				b.ReportMetric(float64(b.N)*benchBatch/b.Elapsed().Seconds(), "ids/s")
			})
		}
	}
}
