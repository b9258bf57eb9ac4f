package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/internal/ucmproto"
	"golang.org/x/sys/unix"
)

// Everyday tools write into a model unmodified (docs/semantics.md,
// "Writing"): rsync through its staging names and rename, tar -x and
// cp -r through final names, with the times and modes they restore.

// sourceModel writes n blocks of model into a plain directory and returns
// it with their ids.
func sourceModel(t *testing.T, model, salt string, n int) (string, []string) {
	t.Helper()
	src := filepath.Join(testDir(t), "src")
	ids := testIDs(salt, n)
	makeShards(t, src, model, ids)
	mustPy(t, append([]string{"put", src, model, "--seed", "9"}, ids...)...)
	return src, ids
}

// TestRsyncInto: rsync -a into a model publishes every block with the
// source's mtime, so a second run transfers nothing; a tampered source
// block is refused at its rename and never visible.
func TestRsyncInto(t *testing.T) {
	requireTool(t, "rsync")
	d := mountUCM(t, mountOpts{})
	const model = "org--Rsync-1B"
	src, ids := sourceModel(t, model, "rsync", 20)
	sh(t, "mkdir", d.path(model))
	sh(t, "rsync", "-a", filepath.Join(src, model)+"/", d.path(model)+"/")
	mustPy(t, append([]string{"verify", d.Mnt, model, "--seed", "9"}, ids...)...)
	if got := listBlocks(t, d.Mnt, model); len(got) != len(ids) {
		t.Fatalf("rsync published %d blocks, want %d", len(got), len(ids))
	}
	for _, id := range ids[:3] {
		s1, _ := os.Stat(blockPath(src, model, id))
		s2, err := os.Stat(blockPath(d.Mnt, model, id))
		if err != nil || !s1.ModTime().Equal(s2.ModTime()) {
			t.Errorf("%s: mtime %v, want the source's %v (%v)", id, s2.ModTime(), s1.ModTime(), err)
		}
	}
	out := sh(t, "rsync", "-a", "--itemize-changes", filepath.Join(src, model)+"/", d.path(model)+"/")
	if strings.Contains(out, ">f") {
		t.Errorf("the second rsync transferred files:\n%s", out)
	}
	// A bad block: refused at the rename (rsync exits 23), never listed.
	bad := testIDs("rsync-bad", 1)[0]
	makeShards(t, src, model, []string{bad})
	raw, err := os.ReadFile(blockPath(src, model, ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(blockPath(src, model, bad), raw, 0o644) // a header naming another id
	cmd := exec.Command("rsync", "-a", filepath.Join(src, model)+"/", d.path(model)+"/")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("rsync of an invalid block succeeded:\n%s", out)
	}
	if _, err := os.Stat(blockPath(d.Mnt, model, bad)); err == nil {
		t.Error("an invalid block became visible")
	}
	if ents, _ := os.ReadDir(d.path(model, bad[:2])); len(ents) > 0 {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("a staging file was left: %s", e.Name())
			}
		}
	}
}

// TestTarAndCpInto: tar -x and cp -r into a model exit 0 and publish
// every block (tar restores the times and modes it archived).
func TestTarAndCpInto(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	const model = "org--Tar-1B"
	src, ids := sourceModel(t, model, "tar", 12)
	tarball := filepath.Join(testDir(t), "m.tar")
	sh(t, "tar", "-C", src, "-cf", tarball, model)
	sh(t, "tar", "-C", d.Mnt, "-xf", tarball)
	mustPy(t, append([]string{"verify", d.Mnt, model, "--seed", "9"}, ids...)...)

	const model2 = "org--Cp-1B"
	src2, ids2 := sourceModel(t, model2, "cp", 12)
	sh(t, "mkdir", d.path(model2))
	sh(t, "cp", "-r", filepath.Join(src2, model2)+"/.", d.path(model2)+"/")
	mustPy(t, append([]string{"verify", d.Mnt, model2, "--seed", "9"}, ids2...)...)
}

// TestForkMidWrite: a writer that runs a child process while a block is
// open (the child's close of the inherited descriptor sends FLUSH) goes
// on writing, and its own close publishes the whole block.
func TestForkMidWrite(t *testing.T) {
	requireTool(t, "python3")
	d := mountUCM(t, mountOpts{})
	const model = "org--Fork-1B"
	src, ids := sourceModel(t, model, "fork", 2)
	sh(t, "mkdir", d.path(model))
	for i, id := range ids {
		dst := blockPath(d.Mnt, model, id)
		script := `
import os, subprocess, sys
src, dst, inherit = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
data = open(src, "rb").read()
fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
if inherit:
    os.set_inheritable(fd, True)
os.write(fd, data[: len(data) // 2])
subprocess.run(["true"], close_fds=not inherit)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
os.write(fd, data[len(data) // 2 :])
os.close(fd)
`
		cmd := exec.Command("python3", "-c", script, blockPath(src, model, id), dst, []string{"0", "1"}[i%2])
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("writer: %v\n%s", err, out)
		}
	}
	mustPy(t, append([]string{"verify", d.Mnt, model, "--seed", "9"}, ids...)...)
}

// TestEngineRepr: an engine's own sidecar replaces the derived one that
// was never stored (open O_WRONLY|O_CREAT|O_TRUNC), and is immutable once
// stored.
func TestEngineRepr(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	const model = "org--Repr-1B"
	src, ids := sourceModel(t, model, "repr", 1)
	sh(t, "mkdir", d.path(model))
	sh(t, "cp", "-r", filepath.Join(src, model)+"/.", d.path(model)+"/")
	id, err := format.ParseID(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	// The test blocks: 4 layers, 2 K/V heads of 64 dims (see testPayload).
	h := format.ReprHeader{ID: id, Kind: format.ReprMax, Dtype: format.Float16, NumLayers: 4, NumKVHeads: 2, Rows: 1, Dim: 64}
	repr := format.NewRepr(h, make([]byte, 4*2*1*64*2))
	p := filepath.Join(d.path(model, ids[0][:2]), ids[0]+".repr")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the derivable sidecar: %v", err)
	}
	if err := os.WriteFile(p, repr, 0o644); err != nil {
		t.Fatalf("writing the engine's sidecar: %v", err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != string(repr) {
		t.Fatalf("read back: %d bytes, %v", len(got), err)
	}
	if err := os.WriteFile(p, repr, 0o644); err == nil {
		t.Error("a stored sidecar was written again")
	}
}

// TestRsyncTwiceFrom0644: rsync -a from a tree of 0644 files (what most
// sources hold) into a ucmb and a ucm-posix model exits 0 twice: the
// second run chmods every published block to 0644, which is accepted and
// changes nothing (the mode stays 0444), and copies no file again.
func TestRsyncTwiceFrom0644(t *testing.T) {
	requireTool(t, "rsync")
	d := mountUCM(t, mountOpts{})
	const model = "org--Rsync0644-1B"
	src, ids := sourceModel(t, model, "rsync0644", 6)
	const raw = "ucm-rsync"
	st := &ucmproto.Store{Root: filepath.Join(src, raw), Width: 2, Shards: 1, ShardSize: 8192, TensorSize: 4096}
	if err := os.MkdirAll(st.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := st.Setup(); err != nil {
		t.Fatal(err)
	}
	rawIDs := testIDs("rsync0644-raw", 6)
	for _, id := range rawIDs {
		if err := st.Dump(id, ucmData(id, st.BlockSize()), false); err != nil {
			t.Fatal(err)
		}
	}
	sh(t, "chmod", "-R", "u+w,go-w,a+rX", src)
	sh(t, "find", src, "-type", "f", "-exec", "chmod", "0644", "{}", "+")
	sh(t, "mkdir", d.path(model), d.path(raw))
	if err := unix.Setxattr(d.path(raw), "user.ucm.layout", []byte("ucm-posix"), 0); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{model, raw} {
		for run := 1; run <= 2; run++ {
			out := sh(t, "rsync", "-a", "--itemize-changes", filepath.Join(src, m)+"/", d.path(m)+"/")
			if run == 2 && strings.Contains(out, ">f") {
				t.Errorf("%s: the second rsync copied files again:\n%s", m, out)
			}
		}
	}
	mustPy(t, append([]string{"verify", d.Mnt, model, "--seed", "9"}, ids...)...)
	for _, id := range rawIDs {
		got, err := os.ReadFile(filepath.Join(d.path(raw), id[:2], id))
		if err != nil || !bytes.Equal(got, ucmData(id, st.BlockSize())) {
			t.Errorf("raw block %s after rsync: %v", id, err)
		}
		if fi, err := os.Stat(filepath.Join(d.path(raw), id[:2], id)); err != nil || fi.Mode().Perm() != 0o444 {
			t.Errorf("raw block %s: mode %v (%v), want 0444 kept", id, fi.Mode(), err)
		}
	}
	if err := unix.Chmod(blockPath(d.Mnt, model, ids[0]), 0o4644); !errors.Is(err, unix.EPERM) {
		t.Errorf("chmod with setuid of a published block: %v, want EPERM", err)
	}
}

// TestCompletion: `ucmfs completion bash|zsh|fish` prints a script that
// asks the binary for its words (--generate-shell-completion), and the
// binary answers with its commands.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		out, err := exec.Command(ucmfsBin, "completion", shell).Output()
		if err != nil || !strings.Contains(string(out), "--generate-shell-completion") {
			t.Errorf("completion %s: %v\n%s", shell, err, out)
		}
	}
	out, err := exec.Command(ucmfsBin, "--generate-shell-completion").Output()
	for _, w := range []string{"mount", "umount", "quota", "stats"} {
		if err != nil || !strings.Contains(string(out), w) {
			t.Errorf("the words for the first argument lack %q: %v\n%s", w, err, out)
		}
	}
}

// TestLogrotateConfig: deploy/logrotate.d/ucmfs rotates a daemon's log
// while the daemon appends to it (copytruncate): after a forced rotation
// the old lines are in the rotated file and the next line the still-open
// writer appends starts the new one.
func TestLogrotateConfig(t *testing.T) {
	bin := requireTool(t, "logrotate") // in /usr/sbin, not on every user's PATH
	conf, err := os.ReadFile(filepath.Join("..", "deploy", "logrotate.d", "ucmfs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := testDir(t)
	logPath := filepath.Join(dir, "mnt-kv.log")
	local := strings.Replace(string(conf), "/var/log/ucmfs/*.log", filepath.Join(dir, "*.log"), 1)
	local = strings.Replace(local, "\tsu root root\n", "", 1)
	confPath := filepath.Join(dir, "ucmfs.logrotate")
	if err := os.WriteFile(confPath, []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640) // as the helper opens it
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	fmt.Fprintln(w, "before the rotation")
	if out, err := exec.Command(bin, "--force", "--state", filepath.Join(dir, "state"), confPath).CombinedOutput(); err != nil {
		t.Fatalf("logrotate: %v\n%s", err, out)
	}
	fmt.Fprintln(w, "after the rotation")
	rotated, err := os.ReadFile(logPath + ".1")
	if err != nil || !strings.Contains(string(rotated), "before the rotation") {
		t.Fatalf("rotated file: %v %q", err, rotated)
	}
	current, err := os.ReadFile(logPath)
	if err != nil || string(current) != "after the rotation\n" {
		t.Fatalf("the log after the rotation: %v %q, want only the new line", err, current)
	}
}

// TestInspectRawFiles: `ucmfs inspect` of a file of a files model (named
// as vLLM names its blocks, <64 hex>.bin) and of a raw block of a
// ucm-posix model, through the mount and in the tier directory, checks
// the bytes against the CRC-32C kept for them instead of reading a UCMB
// header that is not there; a damaged tier copy is INVALID, and a ucmb
// block is still decoded as a block.
func TestInspectRawFiles(t *testing.T) {
	d := mountUCM(t, mountOpts{})
	for model, layout := range map[string]string{"f": "files", "p": "ucm-posix"} {
		if err := os.Mkdir(d.path(model), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(d.path(model), "user.ucm.layout", []byte(layout), 0); err != nil {
			t.Fatal(err)
		}
	}
	id := testIDs("inspect-raw", 1)[0]
	name := strings.Repeat(id, 2) + ".bin"
	files := []string{filepath.Join("f", "abc", "de_g0", name), filepath.Join("p", id[:4], id)}
	for _, rel := range files {
		if err := os.MkdirAll(filepath.Dir(d.path(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(d.path(rel), bytes.Repeat([]byte(rel), 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(d.path("m"), 0o755)
	os.Mkdir(d.path("m", id[:2]), 0o755)
	if err := writeVerdict(blockPath(d.Mnt, "m", id), goodBlock(id)); err != nil {
		t.Fatal(err)
	}
	flushAll(t, d)
	inspect := func(path string) (string, error) {
		out, err := exec.Command(ucmfsBin, "inspect", path).CombinedOutput()
		return string(out), err
	}
	for _, rel := range files {
		for _, p := range []string{d.path(rel), filepath.Join(d.Tier, rel)} {
			if out, err := inspect(p); err != nil || !strings.Contains(out, "type           raw") ||
				!strings.Contains(out, "(computed)") || !strings.Contains(out, "result         OK") {
				t.Errorf("inspect %s: %v\n%s", p, err, out)
			}
		}
	}
	if out, err := inspect(blockPath(d.Mnt, "m", id)); err != nil || !strings.Contains(out, "type           block (UCMB") {
		t.Errorf("inspect of a ucmb block: %v\n%s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(d.Tier, files[0]), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt([]byte("X"), 100)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := inspect(filepath.Join(d.Tier, files[0])); err == nil || !strings.Contains(out, "INVALID: raw xattr_crc rule broken") {
		t.Errorf("inspect of a damaged tier copy: %v\n%s", err, out)
	}
}

// sqliteScript makes a database at argv[1] in the journal mode argv[2],
// commits 50 rows one by one (each commit fsyncs, and in the delete mode
// writes, fsyncs and unlinks a journal), and prints the rows it counts,
// then the rows and the integrity check of a new connection.
const sqliteScript = `
import os, sqlite3, sys
p, mode = sys.argv[1], sys.argv[2]
c = sqlite3.connect(p)
c.execute('pragma journal_mode=' + mode)
c.execute('create table t(x)')
for i in range(50):
    c.execute('insert into t values (?)', (i,))
    c.commit()
n = c.execute('select count(*) from t').fetchone()[0]
c.close()
c = sqlite3.connect(p)
print(n, c.execute('select count(*) from t').fetchone()[0], c.execute('pragma integrity_check').fetchone()[0])
`

// TestSQLiteInFilesModel: SQLite (Python's sqlite3, one process) keeps
// every commit of a database in a files model, in the delete and WAL
// journal modes, as in a plain directory. Before, a commit's journal
// (fsynced, then unlinked) stayed behind as the fsync's published version
// and was rolled back as a hot journal: 47 of 50 rows, then "no such
// table".
func TestSQLiteInFilesModel(t *testing.T) {
	requireTool(t, "python3")
	d := mountUCM(t, mountOpts{Args: []string{"--default-layout", "files"}})
	if err := os.Mkdir(d.path("db"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := testDir(t)
	for _, mode := range []string{"delete", "wal"} {
		var outs []string
		for _, dir := range []string{plain, d.path("db")} {
			out, err := exec.Command("python3", "-c", sqliteScript, filepath.Join(dir, mode+".sqlite"), mode).CombinedOutput()
			if err != nil {
				t.Fatalf("%s in %s: %v\n%s", mode, dir, err, out)
			}
			outs = append(outs, strings.TrimSpace(string(out)))
		}
		if outs[0] != "50 50 ok" || outs[1] != outs[0] {
			t.Errorf("journal mode %s: plain directory %q, files model %q", mode, outs[0], outs[1])
		}
	}
}
