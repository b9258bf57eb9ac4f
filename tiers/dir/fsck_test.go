package dir_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

const fsckModel = "meta-llama--Llama-3.1-8B"

var fsckIDs = format.Chain("meta-llama/Llama-3.1-8B:1:bfloat16:0", 1, []uint32{1, 2, 3, 4, 5})

func fsckPath(id format.ID, ext string) string {
	return fsckModel + "/" + id.Shard() + "/" + id.String() + ext
}

// fsck runs Fsck and returns its report and findings by path.
func fsck(t *testing.T, root string, repair bool) (dir.FsckReport, map[string]dir.Finding) {
	t.Helper()
	found := map[string]dir.Finding{}
	var last int64
	rep, err := dir.Fsck(root, dir.FsckOptions{Repair: repair,
		Finding:  func(f dir.Finding) { found[f.Path] = f },
		Progress: func(n int64) { last = n },
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != int64(rep.Entries) {
		t.Fatalf("progress ended at %d, report says %d entries", last, rep.Entries)
	}
	return rep, found
}

// TestFsckFindings: the rules fsck checks, each finding with its rule,
// and repair moving bad entries aside and removing leftovers.
func TestFsckFindings(t *testing.T) {
	root := t.TempDir()
	good, badCRC, wrongID, orphan, claimed := fsckIDs[0], fsckIDs[1], fsckIDs[2], fsckIDs[3], fsckIDs[4]
	tiertest.WriteFile(t, root, fsckPath(good, ".bin"), tiertest.BlockFile(good))
	tiertest.WriteFile(t, root, fsckPath(good, ".repr"), tiertest.ReprFile(good))
	corrupt := tiertest.BlockFile(badCRC)
	corrupt[format.HeaderSize+5] ^= 0x40
	tiertest.WriteFile(t, root, fsckPath(badCRC, ".bin"), corrupt)
	tiertest.WriteFile(t, root, fsckPath(badCRC, ".repr"), tiertest.ReprFile(badCRC))
	tiertest.WriteFile(t, root, fsckPath(wrongID, ".bin"), tiertest.BlockFile(claimed))
	tiertest.WriteFile(t, root, fsckPath(orphan, ".repr"), tiertest.ReprFile(orphan))
	leftover := fsckModel + "/" + good.Shard() + "/.tmp-" + good.String() + "-1234"
	tiertest.WriteFile(t, root, leftover, []byte("half a block"))
	tiertest.WriteFile(t, root, fsckModel+"/"+good.Shard()+"/notes.txt", []byte("x"))
	tiertest.WriteFile(t, root, "Bad Model/00/x.bin", []byte("x"))
	tiertest.WriteFile(t, root, tier.LockFileName, nil)

	rep, found := fsck(t, root, false)
	want := dir.FsckReport{Entries: 9, Blocks: 3, Reprs: 3, OK: 2, Bad: 6, Leftovers: 1}
	if rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	for path, rule := range map[string]string{
		fsckPath(badCRC, ".bin"):                      "UCMB crc rule broken",
		fsckPath(badCRC, ".repr"):                     "UCMR orphan_sidecar rule broken",
		fsckPath(wrongID, ".bin"):                     "UCMB id rule broken",
		fsckPath(orphan, ".repr"):                     "UCMR orphan_sidecar rule broken",
		fsckModel + "/" + good.Shard() + "/notes.txt": "invalid name",
		"Bad Model": "invalid name",
	} {
		if f, ok := found[path]; !ok || f.Kind != dir.FindingBad || !strings.Contains(f.Err.Error(), rule) {
			t.Errorf("%s: finding %+v, want bad: %s", path, f, rule)
		}
	}
	if f := found[leftover]; f.Kind != dir.FindingLeftover {
		t.Errorf("leftover: %+v", f)
	}

	rep, found = fsck(t, root, true)
	if rep.Moved != 6 || rep.Removed != 1 || found[fsckPath(orphan, ".repr")].Moved != ".quarantine/"+fsckPath(orphan, ".repr") {
		t.Fatalf("repair: %+v", rep)
	}
	rep, _ = fsck(t, root, false)
	if want := (dir.FsckReport{Entries: 2, Blocks: 1, Reprs: 1, OK: 2}); rep != want {
		t.Fatalf("after repair %+v, want %+v", rep, want)
	}
	if _, err := os.Stat(filepath.Join(root, tier.LockFileName)); err != nil {
		t.Fatalf("repair removed the tier's lock file: %v", err)
	}
}

// TestFsckRebuildAgree: the index rebuild adopts exactly the files fsck
// finds in the layout, and fsck sees what a tier writes as all good.
func TestFsckRebuildAgree(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, dir.Config{Kind: "nvme", Dir: root})
	for _, id := range fsckIDs[:3] {
		tiertestPut(d, format.Key{Model: fsckModel, ID: id}, tiertest.BlockFile(id))
	}
	d.Close()
	tiertest.WriteFile(t, root, fsckModel+"/"+fsckIDs[0].Shard()+"/.tmp-x", []byte("half"))
	tiertest.WriteFile(t, root, fsckModel+"/zz/x.bin", []byte("x"))
	rep, _ := fsck(t, root, false)
	if rep.OK != 3 || rep.Bad != 1 || rep.Leftovers != 1 {
		t.Fatalf("fsck of a tier: %+v", rep)
	}
	d = newDir(t, dir.Config{Kind: "nvme", Dir: root})
	if u := d.Usage(); u.Files != int64(rep.OK) {
		t.Fatalf("rebuild indexed %d files, fsck found %d good", u.Files, rep.OK)
	}
}

// TestFsckRepairRefusedWhileHeld: --repair needs the tier's lock, which a
// running daemon's tier holds; a check without repair still runs.
func TestFsckRepairRefusedWhileHeld(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, dir.Config{Kind: "nvme", Dir: root})
	tiertest.WriteFile(t, root, fsckModel+"/00/.tmp-x", []byte("half"))
	if _, err := dir.Fsck(root, dir.FsckOptions{Repair: true}); !errors.Is(err, tier.ErrLocked) {
		t.Fatalf("repair of a held tier: %v, want ErrLocked", err)
	}
	if rep, err := dir.Fsck(root, dir.FsckOptions{}); err != nil || rep.Leftovers != 1 {
		t.Fatalf("check of a held tier: %+v, %v", rep, err)
	}
	d.Close()
	if rep, err := dir.Fsck(root, dir.FsckOptions{Repair: true}); err != nil || rep.Removed != 1 {
		t.Fatalf("repair once released: %+v, %v", rep, err)
	}
	newDir(t, dir.Config{Kind: "nvme", Dir: root}) // and fsck let go of the lock
}

// TestFsckRepairLinks: links where the tier's own names go (.quarantine,
// the lock file) and a link in a model directory are repaired once each:
// the reserved names' links removed, the model's moved aside, each
// reported once, and nothing they point at touched. (A .quarantine link
// made the repair recurse until its stack overflowed.)
func TestFsckRepairLinks(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "m", "junk"), []byte("junk"), 0o644)
	for _, l := range []string{dir.QuarantineDir, tier.LockFileName, "m/w"} {
		if err := os.Symlink(outside, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	var findings []dir.Finding
	rep, err := dir.Fsck(root, dir.FsckOptions{Repair: true, Finding: func(f dir.Finding) { findings = append(findings, f) }})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range findings {
		seen[f.Path]++
		if f.RepairErr != nil {
			t.Errorf("%s: not repaired: %v", f.Path, f.RepairErr)
		}
	}
	for _, p := range []string{dir.QuarantineDir, tier.LockFileName, "m/w", "m/junk"} {
		if seen[p] != 1 {
			t.Errorf("%s reported %d times, want once (findings %+v)", p, seen[p], findings)
		}
	}
	if rep.Errors != 0 {
		t.Errorf("%d errors", rep.Errors)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the directory the links point at now holds %v", ents)
	}
	var st os.FileInfo
	if st, err = os.Lstat(filepath.Join(root, dir.QuarantineDir)); err != nil || !st.IsDir() {
		t.Errorf("%s after the repair: %v", dir.QuarantineDir, err)
	}
}
