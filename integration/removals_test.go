package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/internal/engineproto"
)

// TestRemovalsStayRemoved: files of a files model written back to the
// nvme tier and then removed (SGLang's per-page delete, on the mount) are
// gone from the mount and from the tier at once; the daemon frees them
// behind (no descriptor of a deleted tier file stays open once it
// settles); after kill -9 right after more removals, none of the removed
// files comes back at the remount, the others load whole, and the tier
// holds nothing but them.
func TestRemovalsStayRemoved(t *testing.T) {
	d, root := mountFilesModel(t)
	mnt, tier := d.Mnt, d.Tier
	s := &engineproto.SGLangFile{Root: root, Salt: "rm", Model: "m", TPSize: 1}
	if err := s.Setup(); err != nil {
		t.Fatal(err)
	}
	const pages = 64
	for i := range pages {
		if err := s.Store(i, engineData("rm", i)); err != nil {
			t.Fatal(err)
		}
	}
	flushAll(t, d) // on the tier, as pages of a cache in service are
	tierPath := func(i int) string { return filepath.Join(tier, "m", filepath.Base(s.Path(i))) }
	for i := range pages / 2 {
		if err := s.Delete(i); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{s.Path(i), tierPath(i)} {
			if _, err := os.Lstat(p); !os.IsNotExist(err) {
				t.Fatalf("page %d: %s still there after its removal: %v", i, p, err)
			}
		}
	}
	settledFDs(t, d.pid(), -1) // waits for the RELEASEs of the pages' reads
	waitUntil(t, "the daemon to free the removed tier files", func() bool {
		for _, fd := range fds(t, d.pid()) {
			if strings.HasPrefix(fd[strings.Index(fd, " -> ")+4:], tier) && strings.HasSuffix(fd, " (deleted)") {
				return false
			}
		}
		return true
	})

	// More removals, then kill -9 at once.
	for i := pages / 2; i < pages*3/4; i++ {
		if err := s.Delete(i); err != nil {
			t.Fatal(err)
		}
	}
	d.kill()
	d.detach()
	d = mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	for i := range pages {
		ok, err := s.Exists(i)
		if err != nil {
			t.Fatal(err)
		}
		if removed := i < pages*3/4; ok == removed {
			t.Fatalf("after kill -9 and the remount: page %d exists %v, removed %v", i, ok, removed)
		}
		if !ok {
			continue
		}
		if got, err := s.Load(i, engineBlock); err != nil || !bytes.Equal(got, engineData("rm", i)) {
			t.Fatalf("after kill -9: page %d does not load whole: %v", i, err)
		}
	}
	ents, err := os.ReadDir(filepath.Join(tier, "m"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") { // the model's own files (.ucmfs-model.json, ...)
			names = append(names, e.Name())
		}
	}
	if len(names) != pages/4 {
		t.Errorf("the tier's model directory holds %d entries, want the %d pages never removed: %v", len(names), pages/4, names)
	}
	if _, err := os.Lstat(filepath.Join(tier, ".trash")); !os.IsNotExist(err) {
		t.Errorf("a trash directory in the tier: %v", err)
	}
}
