package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// renameWriter writes files into the directory argv[1] the way a file is
// made to survive a crash: write a temporary file, fsync it, close it,
// rename it over the final name; a<i>.bin through a staging name
// (a<i>.bin.tmp), b<i>.bin through a name that publishes at its close
// (b<i>.part, then moved).
const renameWriter = `
import os, sys
d = sys.argv[1]
for pre, tmp in (("a", ".bin.tmp"), ("b", ".part")):
    for i in range(20):
        t = "%s/%s%d%s" % (d, pre, i, tmp)
        with open(t, "wb") as f:
            f.write(("%s%d " % (pre, i)).encode() * 5000)
            os.fsync(f.fileno())
        os.rename(t, "%s/%s%d.bin" % (d, pre, i))
`

// TestKill9FsyncRename: in a files model, a file written, fsynced and
// renamed over its final name is durable once the rename returns, through
// a staging name (whose fsync is kept for its rename) and through a name
// published at its close (moved: the copy is made durable before the
// durable original goes). kill -9 right after the renames loses none.
func TestKill9FsyncRename(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	dir := d.path("m", "d")
	filesModel(t, d, "m")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("python3", "-c", renameWriter, dir).CombinedOutput(); err != nil {
		t.Fatalf("writer: %v\n%s", err, out)
	}
	d.kill()
	d.detach()

	d2 := mountUCM(t, mountOpts{Mnt: d.Mnt, Tier: d.Tier})
	for _, pre := range []string{"a", "b"} {
		for i := range 20 {
			name := fmt.Sprintf("%s%d.bin", pre, i)
			got, err := os.ReadFile(d2.path("m", "d", name))
			if want := bytes.Repeat([]byte(fmt.Sprintf("%s%d ", pre, i)), 5000); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s after kill -9: %d bytes, %v; want the %d bytes fsynced before its rename", name, len(got), err, len(want))
			}
		}
	}
}
