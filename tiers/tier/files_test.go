package tier

import (
	"errors"
	"os"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/rootfs/crashfs"
	"golang.org/x/sys/unix"
)

// TestDirCacheRemakesAGoneParent: a directory the cache knows (made for
// one File) goes (a directory move or an rmdir took it), and a File in
// another directory beneath it is published: Ensure makes the parent
// again. It failed with ENOENT (mkdir of a/c under a gone a), which a
// directory move in a files model met (integration TestFilesRandomOps:
// "memory tier: mkdir: mkdir …/eng/14/a/b: no such file or directory").
func TestDirCacheRemakesAGoneParent(t *testing.T) {
	r, err := rootfs.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var c DirCache
	if _, err := c.Ensure(r, format.FileKey("m", "a/b/f.bin")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"m/a/b", "m/a"} {
		if err := r.Rmdir(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Ensure(r, format.FileKey("m", "a/c/f.bin")); err != nil {
		t.Fatalf("a File beneath a directory the cache knew and that went: %v", err)
	}
	if err := r.Mkdir("m/a/c/x", 0o755); err != nil {
		t.Fatalf("the directory made again: %v", err)
	}
}

// TestDirCacheMkdirRace: another host makes the same shard directory on
// a shared filesystem at once, and while its mkdir is under way this
// host's mkdir says EEXIST and a stat of the name ENOENT (GlusterFS's
// DHT: integration TestSharedFSEngines/glusterfs/vllm-fs failed with
// "nfs tier: mkdir: stat …: no such file or directory"). Ensure takes it
// for the race: once the other's mkdir is over, the directory is found
// and the File's publish goes on. It failed with ENOENT.
func TestDirCacheMkdirRace(t *testing.T) {
	r, err := rootfs.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Mkdir("m", 0o755); err != nil {
		t.Fatal(err)
	}
	key := format.FileKey("m", "a/f.bin")
	dir := "m/a"
	var mkdirs int
	const underWay = 3 // the other host's mkdir ends with this host's 3rd
	fs := crashfs.Wrap(r, func(op, rel string) error {
		if rel != dir || mkdirs >= underWay {
			return nil
		}
		switch op {
		case "mkdir":
			if mkdirs++; mkdirs == underWay {
				if err := r.Mkdir(dir, 0o755); err != nil { // the other host's
					t.Error(err)
				}
			}
			return &os.PathError{Op: "mkdir", Path: rel, Err: unix.EEXIST}
		case "stat":
			return &os.PathError{Op: "stat", Path: rel, Err: unix.ENOENT}
		}
		return nil
	})
	var c DirCache
	if _, err := c.Ensure(fs, key); err != nil {
		t.Fatalf("a shard directory another host was making: %v", err)
	}
	if mkdirs != underWay {
		t.Errorf("%d mkdirs of %s, want %d", mkdirs, dir, underWay)
	}
	var st unix.Stat_t
	if err := r.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Fatalf("%s: %v, mode %o", dir, err, st.Mode)
	}
}

// TestDirCacheMkdirRaceBounded: a name that mkdir says exists and stat
// never finds is not waited for forever: Ensure returns the ENOENT.
func TestDirCacheMkdirRaceBounded(t *testing.T) {
	r, err := rootfs.Open(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var mkdirs int
	fs := crashfs.Wrap(r, func(op, rel string) error {
		switch {
		case rel != "m":
		case op == "mkdir":
			mkdirs++
			return &os.PathError{Op: "mkdir", Path: rel, Err: unix.EEXIST}
		case op == "stat":
			return &os.PathError{Op: "stat", Path: rel, Err: unix.ENOENT}
		}
		return nil
	})
	var c DirCache
	if _, err := c.Ensure(fs, format.FileKey("m", "f.bin")); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Ensure: %v, want ENOENT", err)
	}
	if mkdirs < 2 {
		t.Errorf("%d mkdirs: the race was not tried again", mkdirs)
	}
}
