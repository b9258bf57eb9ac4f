package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// exclRacer: four processes create the same 200 names with
// O_CREAT|O_EXCL (a lock file's idiom) and print how many each won.
const exclRacer = `
import os, sys, multiprocessing as mp
d = sys.argv[1]
def race(i):
    won = 0
    for k in range(200):
        try:
            fd = os.open("%s/x%d" % (d, k), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        os.write(fd, b"%d" % i)
        os.close(fd)
        won += 1
    return won
with mp.Pool(4) as p:
    print(sum(p.map(race, range(4))))
`

// TestExclAcrossProcesses: in a files model, O_CREAT|O_EXCL is exclusive
// across processes, as on a local disk: while one process writes a name
// (a file invisible to the others until its close publishes it), another
// one's O_EXCL create of it is EEXIST. Of four processes racing for 200
// names, exactly 200 creates win.
func TestExclAcrossProcesses(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	filesModel(t, d, "m")
	out, err := exec.Command("python3", "-c", exclRacer, d.path("m")).CombinedOutput()
	if err != nil {
		t.Fatalf("racer: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "200" {
		t.Errorf("%s O_EXCL creates won for 200 names, want 200", got)
	}
	if ents, err := os.ReadDir(d.path("m")); err != nil || len(ents) != 200 {
		t.Errorf("%d files after the race, %v; want 200", len(ents), err)
	}
}
