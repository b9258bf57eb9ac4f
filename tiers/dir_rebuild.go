package tiers

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/hashdir"
	"golang.org/x/sys/unix"
)

// The index of a directory tier is rebuilt at start from directory
// listings and one stat per file; no file is read. Temp files are removed
// (in a shared directory only those older than staleTempAge, since they
// may be another daemon's writes in flight). Names that break the layout
// are skipped with a log line. The LRU order is the files' mtime order.

const (
	staleTempAge   = time.Hour
	rebuildWorkers = 4  // shard directories listed at once
	maxNameLogs    = 10 // invalid names logged one by one, then counted
)

// rebuildScan collects what the workers find.
type rebuildScan struct {
	mu      sync.Mutex
	found   []Info
	bad     int // invalid names
	temps   int // temp files removed
	lastErr error
}

// skip logs an invalid name (the first few) and counts it.
func (t *DirTier) skip(s *rebuildScan, path, why string) {
	s.mu.Lock()
	s.bad++
	n := s.bad
	s.mu.Unlock()
	if n <= maxNameLogs {
		t.log.Warn("tier rebuild: skipping a name outside the layout", "kind", t.kind, "path", path, "why", why)
	}
}

// rebuild fills the index from the directory tree.
func (t *DirTier) rebuild() error {
	models, err := t.readDir(t.root)
	if err != nil {
		return fmt.Errorf("%s tier: rebuild: %w", t.kind, err)
	}
	s := &rebuildScan{}
	type job struct{ model, hh string }
	jobs := make(chan job)
	var wg sync.WaitGroup
	for i := 0; i < rebuildWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				t.scanShard(s, j.model, j.hh)
			}
		}()
	}
	for _, m := range models {
		if strings.HasPrefix(m.Name(), ".") {
			continue // the lock file, or anything hidden
		}
		mdir := filepath.Join(t.root, m.Name())
		if !m.IsDir() || hashdir.ValidateModel(m.Name()) != nil {
			t.skip(s, mdir, "not a model directory")
			continue
		}
		shards, err := t.readDir(mdir)
		if err != nil {
			s.mu.Lock()
			s.lastErr = err
			s.mu.Unlock()
			break
		}
		for _, sh := range shards {
			if _, ok := hashdir.ParseShard(sh.Name()); !ok || !sh.IsDir() {
				t.skip(s, filepath.Join(mdir, sh.Name()), "not a shard directory")
				continue
			}
			jobs <- job{m.Name(), sh.Name()}
		}
	}
	close(jobs)
	wg.Wait()
	if s.lastErr != nil {
		return fmt.Errorf("%s tier: rebuild: %w", t.kind, s.lastErr)
	}
	sort.Slice(s.found, func(i, j int) bool { return s.found[i].MTime.Before(s.found[j].MTime) })
	for _, info := range s.found {
		t.idx.adopt(newEntry(info))
	}
	u := t.idx.usage()
	t.log.Info("tier index rebuilt", "kind", t.kind, "dir", t.root, "files", u.Files, "bytes", u.Used,
		"skipped", s.bad, "temp_removed", s.temps)
	return nil
}

// readDir lists a directory under the operation timeout.
func (t *DirTier) readDir(dir string) ([]os.DirEntry, error) {
	var ents []os.DirEntry
	err := t.do("readdir", func() error {
		var err error
		ents, err = os.ReadDir(dir)
		return err
	}, nil)
	return ents, err
}

// scanShard lists one <model>/<hh> directory: one stat per entry, relative
// to the directory's descriptor.
func (t *DirTier) scanShard(s *rebuildScan, model, hh string) {
	dir := filepath.Join(t.root, model, hh)
	var found []Info
	err := t.do("scan", func() error {
		d, err := os.Open(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		names, err := d.Readdirnames(-1)
		if err != nil {
			return err
		}
		dfd := int(d.Fd())
		for _, name := range names {
			var st unix.Stat_t
			if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // gone meanwhile
			}
			if strings.HasPrefix(name, tmpPrefix) {
				t.removeTemp(s, dfd, name, &st)
				continue
			}
			id, kind, err := hashdir.ParseFileName(hh, name)
			if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				t.skip(s, filepath.Join(dir, name), "not a block or sidecar file")
				continue
			}
			found = append(found, Info{
				Key:   Key{Model: model, ID: id, Kind: kind},
				Size:  st.Size,
				MTime: statMTime(&st),
			})
		}
		return nil
	}, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !isENOENT(err) {
		s.lastErr = err
		return
	}
	s.found = append(s.found, found...)
}

// removeTemp removes a temp file left by a crash.
func (t *DirTier) removeTemp(s *rebuildScan, dfd int, name string, st *unix.Stat_t) {
	if t.shared && time.Since(statMTime(st)) < staleTempAge {
		return
	}
	if err := unix.Unlinkat(dfd, name, 0); err == nil {
		s.mu.Lock()
		s.temps++
		s.mu.Unlock()
	}
}
