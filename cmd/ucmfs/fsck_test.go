package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

const testModel = "meta-llama--Llama-3.1-8B"

func tierPath(id format.ID, ext string) string {
	return testModel + "/" + id.Shard() + "/" + id.String() + ext
}

func TestFsckCleanTree(t *testing.T) {
	dir := t.TempDir()
	for _, id := range testIDs[:3] {
		writeAt(t, dir, tierPath(id, ".bin"), blockFile(id))
	}
	writeAt(t, dir, tierPath(testIDs[0], ".repr"), reprFile(testIDs[0]))
	if err := os.MkdirAll(filepath.Join(dir, "empty-model", "00"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runMain(t, "fsck", dir)
	want := "fsck " + dir + ": 4 files checked (3 blocks, 1 sidecars): 4 ok, 0 bad, 0 errors, 0 leftovers\n"
	if code != 0 || out != want || errs != "" {
		t.Fatalf("fsck: %d\n%s%s", code, out, errs)
	}
}

func TestFsckFindsAndRepairs(t *testing.T) {
	dir := t.TempDir()
	good, badCRC, wrongID, orphan, claimed := testIDs[0], testIDs[1], testIDs[2], testIDs[3], testIDs[4]

	writeAt(t, dir, tierPath(good, ".bin"), blockFile(good))
	writeAt(t, dir, tierPath(good, ".repr"), reprFile(good))
	corrupt := blockFile(badCRC)
	corrupt[format.HeaderSize+5] ^= 0x40
	writeAt(t, dir, tierPath(badCRC, ".bin"), corrupt)
	writeAt(t, dir, tierPath(badCRC, ".repr"), reprFile(badCRC)) // fine itself, but its block is bad
	writeAt(t, dir, tierPath(wrongID, ".bin"), blockFile(claimed))
	writeAt(t, dir, tierPath(orphan, ".repr"), reprFile(orphan))
	leftover := testModel + "/" + good.Shard() + "/.tmp-" + good.String() + "-1234"
	writeAt(t, dir, leftover, []byte("half a block"))
	writeAt(t, dir, testModel+"/"+good.Shard()+"/notes.txt", []byte("x"))
	writeAt(t, dir, "Bad Model/00/x.bin", []byte("x"))

	code, out, _ := runMain(t, "fsck", dir)
	if code != exitFail {
		t.Fatalf("fsck status %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		"bad " + tierPath(badCRC, ".bin") + ": UCMB crc rule broken",
		"bad " + tierPath(badCRC, ".repr") + ": UCMR orphan_sidecar rule broken",
		"bad " + tierPath(wrongID, ".bin") + ": UCMB id rule broken",
		"bad " + tierPath(orphan, ".repr") + ": UCMR orphan_sidecar rule broken",
		"bad " + testModel + "/" + good.Shard() + "/notes.txt: ",
		"bad Bad Model: ",
		"leftover " + leftover + "\n",
		": 6 files checked (3 blocks, 3 sidecars): 2 ok, 6 bad, 0 errors, 1 leftovers\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bad "+tierPath(good, "")) {
		t.Errorf("good block reported:\n%s", out)
	}
	if !pathExists(filepath.Join(dir, tierPath(badCRC, ".bin"))) || pathExists(filepath.Join(dir, ".quarantine")) {
		t.Fatal("fsck without --repair changed the tree")
	}

	code, out, _ = runMain(t, "fsck", "--repair", dir)
	if code != exitFail || !strings.Contains(out, "; repaired: 6 moved to .quarantine, 1 leftovers removed\n") {
		t.Fatalf("fsck --repair: %d\n%s", code, out)
	}
	for _, r := range []string{tierPath(badCRC, ".bin"), tierPath(badCRC, ".repr"), tierPath(wrongID, ".bin"), tierPath(orphan, ".repr"), "Bad Model/00/x.bin"} {
		if pathExists(filepath.Join(dir, r)) || !pathExists(filepath.Join(dir, ".quarantine", r)) {
			t.Errorf("%s not moved into .quarantine", r)
		}
	}
	if pathExists(filepath.Join(dir, leftover)) {
		t.Error("leftover not removed")
	}
	if !pathExists(filepath.Join(dir, tierPath(good, ".bin"))) || !pathExists(filepath.Join(dir, tierPath(good, ".repr"))) {
		t.Fatal("good files touched")
	}

	code, out, _ = runMain(t, "fsck", dir)
	if code != 0 || !strings.HasSuffix(out, ": 2 files checked (1 blocks, 1 sidecars): 2 ok, 0 bad, 0 errors, 0 leftovers\n") {
		t.Fatalf("second fsck: %d\n%s", code, out)
	}
	// Quarantining the same path twice keeps both copies.
	writeAt(t, dir, tierPath(wrongID, ".bin"), blockFile(claimed))
	if code, _, _ := runMain(t, "fsck", "--repair", dir); code != exitFail ||
		!pathExists(filepath.Join(dir, ".quarantine", tierPath(wrongID, ".bin")+".1")) {
		t.Fatal("second quarantine of the same name")
	}
}

func TestFsckXattrCRC(t *testing.T) {
	dir := t.TempDir()
	id := testIDs[0]
	p := writeAt(t, dir, tierPath(id, ".bin"), blockFile(id))
	err := syscall.Setxattr(p, format.CRCXattr, []byte("0badc0de"), 0)
	if errors.Is(err, syscall.ENOTSUP) {
		t.Skip("no user xattrs here")
	} else if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runMain(t, "fsck", dir)
	if code != exitFail || !strings.Contains(out, "bad "+tierPath(id, ".bin")+": UCMB xattr_crc rule broken") {
		t.Fatalf("xattr mismatch: %d\n%s", code, out)
	}
	crc := format.CRC32C(blockFile(id)[format.HeaderSize:])
	if err := syscall.Setxattr(p, format.CRCXattr, []byte(format.FormatCRC(crc)), 0); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runMain(t, "fsck", dir); code != 0 {
		t.Fatalf("xattr match: %d\n%s", code, out)
	}
}

func TestFsckUsage(t *testing.T) {
	dir := t.TempDir()
	file := writeAt(t, dir, "f", nil)
	for name, args := range map[string][]string{
		"no dir":        {"fsck"},
		"two dirs":      {"fsck", dir, dir},
		"not a dir":     {"fsck", file},
		"missing":       {"fsck", filepath.Join(dir, "absent")},
		"unknown flag:": {"fsck", "--force", dir},
	} {
		if code, out, errs := runMain(t, args...); code != exitUsage || out != "" || errs == "" {
			t.Errorf("%s: %d %q %q", name, code, out, errs)
		}
	}
}

// The lock file a running daemon holds on its tier is neither bad nor a
// leftover: --repair must never remove it from under the daemon.
func TestFsckKeepsTierLock(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, tiers.LockFileName)
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runMain(t, "fsck", "--repair", dir)
	if code != 0 || strings.Contains(out, "leftover "+tiers.LockFileName) {
		t.Fatalf("fsck of a tier with its lock file: code %d\n%s", code, out)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("fsck --repair removed the tier lock: %v", err)
	}
}

// TestFsckProgress: --progress counts the entries checked on stderr
// (every second, and once at the end); without it, and with stderr not
// a terminal, stderr stays empty.
func TestFsckProgress(t *testing.T) {
	dir := t.TempDir()
	for _, id := range testIDs[:3] {
		writeAt(t, dir, tierPath(id, ".bin"), blockFile(id))
	}
	if code, _, errs := runMain(t, "fsck", dir); code != 0 || errs != "" {
		t.Fatalf("fsck: %d, stderr %q", code, errs)
	}
	code, out, errs := runMain(t, "fsck", "--progress", dir)
	if code != 0 || !strings.HasSuffix(errs, "fsck "+dir+": 3 entries checked\n") || !strings.Contains(out, "3 ok") {
		t.Fatalf("fsck --progress: %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestFsckRepairRefusedWhileHeld: --repair of a tier directory that a
// running daemon's tier holds exits 3 and changes nothing; a check
// without --repair runs.
func TestFsckRepairRefusedWhileHeld(t *testing.T) {
	dir := t.TempDir()
	d, err := tiers.NewDirTier(tiers.DirConfig{Kind: "nvme", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	leftover := testModel + "/00/.tmp-x"
	writeAt(t, dir, leftover, []byte("half"))
	code, out, errs := runMain(t, "fsck", "--repair", dir)
	if code != exitBusy || out != "" || !strings.Contains(errs, "in use by a running daemon") {
		t.Fatalf("fsck --repair of a held tier: %d, stdout %q, stderr %q", code, out, errs)
	}
	if !pathExists(filepath.Join(dir, leftover)) {
		t.Fatal("the refused repair removed a leftover")
	}
	if code, out, _ := runMain(t, "fsck", dir); code != exitLeftovers || !strings.Contains(out, "leftover "+leftover) {
		t.Fatalf("fsck of a held tier: %d\n%s", code, out)
	}
}

// TestFsckLeftoversOnly: a crash's temp file in an otherwise good tier is
// exit status 4 (not 0, so a script notices it); --repair removes it and
// exits 0.
func TestFsckLeftoversOnly(t *testing.T) {
	dir := t.TempDir()
	writeAt(t, dir, tierPath(testIDs[0], ".bin"), blockFile(testIDs[0]))
	leftover := testModel + "/" + testIDs[0].Shard() + "/.tmp-otherhost@42-" + testIDs[0].String() + "-1"
	writeAt(t, dir, leftover, []byte("half"))
	if code, out, _ := runMain(t, "fsck", dir); code != exitLeftovers || !strings.Contains(out, "leftover "+leftover) {
		t.Fatalf("fsck with a leftover: exit %d\n%s", code, out)
	}
	if code, out, _ := runMain(t, "fsck", "--repair", dir); code != 0 || pathExists(filepath.Join(dir, leftover)) {
		t.Fatalf("fsck --repair of a leftover: exit %d\n%s", code, out)
	}
	if code, _, _ := runMain(t, "fsck", dir); code != 0 {
		t.Fatalf("fsck after the repair: exit %d", code)
	}
}
