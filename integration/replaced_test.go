package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// replacedRace, in Python processes: three writers publish new versions
// of argv[1] over each other for argv[2] seconds, each its own way (an
// engine's tmp + os.replace, a rewrite with O_TRUNC, a rewrite made
// durable with fsync), while a reader opens and reads it. It prints the
// writers' errors and the reader's opens, misses (ENOENT) and reads of a
// size no writer wrote.
const replacedRace = `
import os, sys, time, multiprocessing as mp
p, secs = sys.argv[1], float(sys.argv[2])
def writer(mode):
    end = time.time() + secs; errs = 0; c = 0
    while time.time() < end:
        c += 1
        try:
            if mode == "replace":
                t = "%s.tmp.%d" % (p, c)
                with open(t, "wb") as f: f.write(b"r" * 4096)
                os.replace(t, p)
            elif mode == "trunc":
                with open(p, "wb") as f: f.write(b"t" * 4096)
            else:
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    os.write(fd, b"f" * 4096); os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError as e:
            errs += 1; print("writer", mode, e, file=sys.stderr)
    return errs
def reader(_):
    end = time.time() + secs; n = miss = odd = 0
    while time.time() < end:
        n += 1
        try:
            with open(p, "rb") as f: b = f.read()
            if len(b) != 4096: odd += 1
        except FileNotFoundError:
            miss += 1
    return n, miss, odd
if __name__ == "__main__":
    with open(p, "wb") as f: f.write(b"0" * 4096)
    with mp.Pool(4) as pool:
        w = pool.map_async(writer, ["replace", "trunc", "fsync"]); r = pool.apply_async(reader, (0,))
        n, miss, odd = r.get()
        print("writer-errors", sum(w.get()), "opens", n, "misses", miss, "odd", odd)
`

// TestReadWhileReplaced: a File that writers keep replacing (rename over
// it, O_TRUNC, fsync) is never missing to a reader and never torn, and no
// writer fails, as on a local disk. An open between the removal of the
// old version and the commit of the new one answered ENOENT (2.7% of
// opens), and a durable publish whose version another writer replaced
// meanwhile failed with ENOENT and removed the other writer's version.
func TestReadWhileReplaced(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	dir := filesModel(t, d, "m")
	out, err := exec.Command("python3", "-c", replacedRace, dir+"/page.bin", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	last := strings.Fields(lines[len(lines)-1])
	if len(last) != 8 || last[1] != "0" || last[5] != "0" || last[7] != "0" {
		t.Errorf("writers and reader: %s", out)
	}
}
