package integration

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

const gpuModel = "org--GPU-Test-7B"

// guardImage is a fresh region of size bytes: byte i is guardAt(i).
func guardImage(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = guardAt(i)
	}
	return b
}

// guardAt is the guard byte at offset i of a region.
func guardAt(i int) byte { return byte(i*131 + 7) }

// gpuRun runs `ucmcli gpu` once: a separate process that creates a
// sim region of len(init) bytes in /dev/shm, fills it with init,
// registers it with the daemon, sends requests (%r: the region number),
// and saves the region. It returns the answers, one per request, and
// the region's bytes at the end.
func gpuRun(t *testing.T, d *daemon, init []byte, requests ...string) ([]string, []byte) {
	t.Helper()
	dir := t.TempDir()
	in, saved := filepath.Join(dir, "init"), filepath.Join(dir, "saved")
	if err := os.WriteFile(in, init, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"gpu", "--size", fmt.Sprint(len(init)), "--init", in, "--save", saved, d.Mnt}, requests...)
	out := mustPy(t, args...)
	answers := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(answers) != len(requests) {
		t.Fatalf("%d answers to %d requests:\n%s", len(answers), len(requests), out)
	}
	region, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	return answers, region
}

// diffAt is the first offset where a and b differ, or -1.
func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// TestGPUSimRegionAcrossProcesses is the acceptance test of the GPU data
// path without a GPU: a separate process (the Python client) registers
// a sim region of its own, loads 100 blocks into it, whole payloads,
// layer ranges and whole files, and the region then holds exactly those
// bytes at their offsets and its guard bytes everywhere else; refused
// requests (malformed, unknown ids, bad paths and handles, out of
// bounds) copy nothing and the daemon goes on serving.
func TestGPUSimRegionAcrossProcesses(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--gpu", "sim"}})
	sh(t, "mkdir", d.path(gpuModel))
	ids := testIDs("gpu", 100)
	mustPy(t, append([]string{"put", d.Mnt, gpuModel}, ids...)...)
	blocks := make([][]byte, len(ids))
	for i, id := range ids {
		var err error
		if blocks[i], err = os.ReadFile(blockPath(d.Mnt, gpuModel, id)); err != nil {
			t.Fatal(err)
		}
	}
	layer := func(b []byte, first, last int) []byte { // 4 layers
		per := (len(b) - format.HeaderSize) / 4
		return b[format.HeaderSize+first*per : format.HeaderSize+(last+1)*per]
	}
	const stride = 40_000
	probe := len(ids)*stride + 1000 // where refused requests would have copied
	size := probe + 2*stride
	want := guardImage(size)
	var requests []string
	var items []string
	for i, id := range ids {
		off := i*stride + 7 + i // odd, unaligned offsets
		var item string
		var b []byte
		switch i % 4 {
		case 0:
			item, b = fmt.Sprintf("%s:%d", id, off), blocks[i][format.HeaderSize:]
		case 1:
			item, b = fmt.Sprintf("%s:%d:1-2", id, off), layer(blocks[i], 1, 2)
		case 2:
			item, b = fmt.Sprintf("%s:%d:3", id, off), layer(blocks[i], 3, 3)
		case 3:
			item, b = fmt.Sprintf("%s:%d:file", id, off), blocks[i]
		}
		copy(want[off:], b)
		if items = append(items, item); len(items) == 25 {
			requests = append(requests, "load %r "+gpuModel+" "+strings.Join(items, " "))
			items = nil
		}
	}
	absent := testIDs("gpu-absent", 1)[0]
	refused := []struct{ req, errno string }{
		{fmt.Sprintf("load %%r %s %s:%d %s:%d", gpuModel, ids[0], probe, absent, probe+stride), "ENOENT"},
		{fmt.Sprintf("load %%r %s %s:%d %s:%d", gpuModel, ids[0], probe, ids[1], size-10), "EINVAL"},
		{fmt.Sprintf("load %%r %s %s:%d %s:%d:file", gpuModel, ids[0], probe, ids[1], size-len(blocks[1])+1), "EINVAL"},
		{fmt.Sprintf("load %%r %s %s:%d:0-4", gpuModel, ids[0], probe), "EINVAL"},
		{fmt.Sprintf("load %%r %s %s:-1", gpuModel, ids[0]), "EINVAL"},
		{fmt.Sprintf("load %%r %s %s", gpuModel, ids[0]), "EINVAL"},
		{fmt.Sprintf("load %%r no-such-model %s:%d", ids[0], probe), "ENOENT"},
		{fmt.Sprintf("load 99 %s %s:%d", gpuModel, ids[0], probe), "EBADF"},
		{"load", "EINVAL"},
		{"frobnicate %r", "EINVAL"},
		{"register sim /dev/shm/ucmfs-no-such-region 4096", "ENOENT"},
		{"register sim /dev/shm 4096", "EISDIR"},
		{"register cuda " + strings.Repeat("ab", 64) + " 4096", "ENODEV"},
		{"register sim " + filepath.Join(pythonDir, "pyproject.toml") + " 99999999999", "EINVAL"},
		{"unregister 42", "EBADF"},
	}
	for _, r := range refused {
		requests = append(requests, r.req)
	}
	requests = append(requests, fmt.Sprintf("load %%r %s %s:%d", gpuModel, ids[0], probe)) // still serving
	copy(want[probe:], blocks[0][format.HeaderSize:])

	answers, region := gpuRun(t, d, guardImage(size), requests...)
	for i := range 4 {
		if !strings.HasPrefix(answers[i], "ok loaded=25 bytes=") {
			t.Errorf("load %d: %q", i, answers[i])
		}
	}
	for i, r := range refused {
		if a := answers[4+i]; !strings.HasPrefix(a, "err "+r.errno+" ") {
			t.Errorf("%q: %q, want err %s", r.req, a, r.errno)
		}
	}
	if a := answers[len(answers)-1]; !strings.HasPrefix(a, "ok loaded=1 ") {
		t.Errorf("the load after the refused requests: %q", a)
	}
	if i := diffAt(region, want); i >= 0 {
		t.Fatalf("the region differs at offset %d (slot %d): a block misplaced, or a byte written outside the loads", i, i/stride)
	}
	st := statsOf(t, d)
	if st["gpu_loads"] != 5.0 || st["gpu_load_blocks"] != 101.0 || st["gpu_regions"] != 0.0 || st["gpu_device"] != "sim" {
		t.Errorf("stats after the session: %v", st)
	}
}

// TestGPUDumpAcrossProcesses: blocks a separate process holds in its sim
// region are published by dump: readable through the mount, valid for
// `ucmfs inspect`, counted as existing the second time; a request with
// one corrupt block publishes nothing; the region is never written.
func TestGPUDumpAcrossProcesses(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--gpu", "sim"}})
	sh(t, "mkdir", d.path(gpuModel))
	const n, stride = 10, 9000
	size := (n+2)*stride + 100
	init := guardImage(size)
	ids := make([]format.ID, n+2)
	blocks := make([][]byte, n+2)
	items := make([]string, n+2)
	for i := range ids {
		ids[i] = format.ID(md5.Sum(fmt.Appendf(nil, "dump/%d", i)))
		payload := bytes.Repeat([]byte{byte(i), byte(i * 3), 0x5a, 0xa5}, 2000) // 4 layers × 2 tensors × 1000 bytes
		h := format.BlockHeader{ID: ids[i], NumLayers: 4, BlockSize: 16, Dtype: format.Float16}
		blocks[i] = format.NewBlock(h, payload)
		off := 3 + i*stride
		copy(init[off:], blocks[i])
		items[i] = fmt.Sprintf("%s:%d:%d", ids[i], off, len(blocks[i]))
	}
	init[3+(n+1)*stride+format.HeaderSize+10] ^= 0xff // block n+1: its payload no longer matches its CRC
	all := "dump %r " + gpuModel + " " + strings.Join(items[:n], " ")
	answers, region := gpuRun(t, d, init, all, all,
		"dump %r "+gpuModel+" "+items[n]+" "+items[n+1],
		"dump %r "+gpuModel+" "+items[n]+fmt.Sprint(" ", ids[n], ":", size-100, ":1000"))
	if answers[0] != fmt.Sprintf("ok dumped=%d existing=0", n) || answers[1] != fmt.Sprintf("ok dumped=0 existing=%d", n) {
		t.Errorf("dumps: %q", answers[:2])
	}
	for i, a := range answers[2:] {
		if !strings.HasPrefix(a, "err EINVAL ") {
			t.Errorf("refused dump %d: %q", i, a)
		}
	}
	if i := diffAt(region, init); i >= 0 {
		t.Fatalf("a dump wrote into the region at offset %d", i)
	}
	var paths []string
	for i := range ids[:n] {
		p := blockPath(d.Mnt, gpuModel, ids[i].String())
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, blocks[i]) {
			t.Fatalf("dumped block %d through the mount: %d bytes, %v", i, len(got), err)
		}
		paths = append(paths, p)
	}
	if out, err := exec.Command(ucmfsBin, append([]string{"inspect"}, paths...)...).CombinedOutput(); err != nil {
		t.Errorf("ucmfs inspect of the dumped blocks: %v\n%s", err, out)
	}
	for _, id := range ids[n:] {
		if _, err := os.Stat(blockPath(d.Mnt, gpuModel, id.String())); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s published by a refused dump: %v", id, err)
		}
	}
	st := statsOf(t, d)
	if st["gpu_dumps"] != 2.0 || st["gpu_dump_blocks"] != float64(n) || st["gpu_dump_existing"] != float64(n) {
		t.Errorf("stats: %v", st)
	}
}

// TestGPUClientDemo runs the reference client's demo, which ends with a
// sim round trip: a layer loaded into a region, a block dumped from it.
func TestGPUClientDemo(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--gpu", "sim"}})
	out := mustPy(t, "demo", d.Mnt)
	for _, want := range []string{"loaded into a sim region: same bytes", "block 3 dumped from the region: 1 published"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

// TestGPUModes: --gpu off mounts without .ucm/gpu; --gpu cuda without a
// CUDA driver stops before mounting and says why.
func TestGPUModes(t *testing.T) {
	d := mountUCM(t, mountOpts{Args: []string{"--gpu", "off"}})
	if _, err := os.Stat(d.path(".ucm", "gpu")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--gpu off: .ucm/gpu %v", err)
	}
	if _, ok := statsOf(t, d)["gpu_device"]; ok {
		t.Error("--gpu off: stats name a device")
	}
	d = startUCM(t, mountOpts{Args: []string{"--gpu", "cuda"}})
	if err := d.waitReady(); err == nil {
		t.Skip("a CUDA driver and GPU are here: --gpu cuda mounted")
	}
	if code := d.wait(); code != 1 || !strings.Contains(d.out.String(), "no GPU device") {
		t.Errorf("--gpu cuda without a driver: exit %d\n%s", code, d.out.String())
	}
	if isMounted(d.Mnt) {
		t.Error("--gpu cuda without a driver left a mount")
	}
}
