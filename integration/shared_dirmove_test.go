package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSharedDirMoveOneRename: on a shared tier (a local directory here,
// watched with inotify), a directory move within a files model is one
// rename of the directory on the share: the model's directory there sees
// d1 renamed to d2 and nothing else of either name, and no file comes or
// goes in the directory moved (before, d2 was made on the share and the
// files moved into it one by one, and other hosts listed the move half
// done: TestSharedFSDirMove). The same for a move a crash cut short
// before the share's rename, finished at the next start (its record
// planted in the model's record on the share, as such a crash leaves it).
func TestSharedDirMoveOneRename(t *testing.T) {
	share := sharedDir(t)
	nvme := filepath.Join(testDir(t), "nvme")
	if err := os.Mkdir(nvme, 0o755); err != nil {
		t.Fatal(err)
	}
	const model, n = "mv", 16
	data := func(i int) []byte { return bytes.Repeat([]byte(fmt.Sprintf("moved %d;", i)), 512) }
	file := func(i int) string { return fmt.Sprintf("f%02d.bin", i) }

	a := mountUCM(t, sharedMount("nfs:"+share, "--tier", "nvme:"+nvme))
	filesModel(t, a, model)
	if err := os.Mkdir(a.path(model, "d1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := tmpRename(a.path(model, "d1", "."+file(i)), a.path(model, "d1", file(i)), data(i)); err != nil {
			t.Fatal(err)
		}
	}
	flushAll(t, a)
	w := watchShare(t, filepath.Join(share, model), filepath.Join(share, model, "d1"))
	if err := os.Rename(a.path(model, "d1"), a.path(model, "d2")); err != nil {
		t.Fatal(err)
	}
	w.oneRename(t, "mv d1 d2", "d1", "d2")
	for i := range n {
		if !readsAs(filepath.Join(share, model, "d2", file(i)), data(i)) || !readsAs(a.path(model, "d2", file(i)), data(i)) {
			t.Errorf("d2/%s does not read as it was under d1 (on the share, through the mount)", file(i))
		}
	}
	if code := a.stop(); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}

	// A move of d2 to d3 cut short before the share's rename: its record
	// is in the model's record on every tier, d2 whole on the share.
	for _, root := range []string{share, nvme} {
		plantMove(t, filepath.Join(root, model, ".ucmfs-model.json"), map[string]any{"from": "d2", "to_model": model, "to": "d3"})
	}
	w = watchShare(t, filepath.Join(share, model), filepath.Join(share, model, "d2"))
	a = mountUCM(t, sharedMount("nfs:"+share, "--tier", "nvme:"+nvme, "--log-level", "info"))
	if !strings.Contains(a.out.String(), "directory move cut short by a crash: finished") {
		t.Errorf("no line of the move finished at the start:\n%s", a.out.String())
	}
	w.oneRename(t, "the move finished at the start", "d2", "d3")
	for i := range n {
		if !readsAs(a.path(model, "d3", file(i)), data(i)) {
			t.Errorf("d3/%s does not read as it was under d2", file(i))
		}
	}
}

// plantMove adds the directory move mv to the model record at rec, as a
// crash part-way through it leaves the record.
func plantMove(t *testing.T, rec string, mv map[string]any) {
	t.Helper()
	editRecord(t, rec, func(v map[string]any) { v["moves"] = []map[string]any{mv} })
}

// editRecord rewrites the model record at rec as edit changes it.
func editRecord(t *testing.T, rec string, edit func(v map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	if b, err = json.Marshal(v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// shareWatch is an inotify instance watching a model's directory on the
// share and the directory to be moved in it.
type shareWatch struct {
	fd          int
	parent, dir int // watch descriptors
}

// watchShare watches parent (renames, entries made or removed) and dir
// (files made, removed or moved in or out).
func watchShare(t *testing.T, parent, dir string) *shareWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	const mask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO
	pw, err := unix.InotifyAddWatch(fd, parent, mask)
	if err != nil {
		t.Fatal(err)
	}
	dw, err := unix.InotifyAddWatch(fd, dir, mask)
	if err != nil {
		t.Fatal(err)
	}
	return &shareWatch{fd: fd, parent: pw, dir: dw}
}

// oneRename checks that the events queued so far are the rename of from
// to to in the parent (its records' temp files, dot names, aside) and
// nothing in the directory.
func (w *shareWatch) oneRename(t *testing.T, what, from, to string) {
	t.Helper()
	var parent, dir []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if n <= 0 || err != nil {
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			e := fmt.Sprintf("%s %#x", name, ev.Mask)
			switch {
			case int(ev.Wd) == w.dir:
				dir = append(dir, e)
			case int(ev.Wd) == w.parent && !strings.HasPrefix(name, "."):
				parent = append(parent, e)
			}
		}
	}
	want := []string{fmt.Sprintf("%s %#x", from, unix.IN_MOVED_FROM|unix.IN_ISDIR), fmt.Sprintf("%s %#x", to, unix.IN_MOVED_TO|unix.IN_ISDIR)}
	if fmt.Sprint(parent) != fmt.Sprint(want) || len(dir) > 0 {
		t.Errorf("%s on the share: the model's directory saw %v, want %v; the directory moved saw %v, want nothing",
			what, parent, want, dir)
	}
}
