package dir_test

import (
	"testing"

	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/tiers/dir"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
)

// TestDirCRCFromOpenFile: the CRC of a file the index does not know yet
// (a rebuilt or adopted entry) is read by CRCFrom from the file already
// open, through its descriptor: the tier neither opens nor stats nor
// reads an xattr by the file's path again (each a round trip to the
// servers of a shared filesystem: a copy from GlusterFS made a second
// open for it), and the CRC read is kept.
func TestDirCRCFromOpenFile(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, dir.Config{Dir: root, Capacity: 1 << 30})
	k := tiertest.Key("a", 0)
	tiertest.Put(t, d, k, tiertest.Payload(0, 4096), tier.CommitOptions{CRC: 0x0badf00d, HasCRC: true})
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	f := crashfs.NewFaults()
	d = newDir(t, dir.Config{Dir: root, Capacity: 1 << 30, OpenFS: crashfs.OpenWrapped(f.Before)})
	if info, _ := d.Stat(k); info.HasCRC {
		t.Fatalf("the rebuilt entry knows its CRC already: %+v", info)
	}
	file, err := d.Open(k)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	before := f.Calls("open", "stat", "lstat", "getxattr")
	if crc, has, err := d.CRCFrom(k, file); err != nil || !has || crc != 0x0badf00d {
		t.Fatalf("CRCFrom: %08x %v %v, want 0badf00d", crc, has, err)
	}
	if n := f.Calls("open", "stat", "lstat", "getxattr") - before; n != 0 {
		t.Errorf("CRCFrom made %d operations by path", n)
	}
	if info, _ := d.Stat(k); !info.HasCRC || info.CRC != 0x0badf00d {
		t.Errorf("the CRC read is not kept: %+v", info)
	}
}
