package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
)

// BenchmarkGPULoad2MiB measures loads of 2 MiB blocks into a sim region
// through MNT/.ucm/gpu of the real daemon (its own process), 64 blocks
// per load request, against a plain read of the same blocks' payloads
// from the mount (open, pread of the 2 MiB payload into an ordinary
// buffer, close; FUSE passthrough where the kernel allows) in the same
// run: each round runs one load request and then the reads of the same
// 64 blocks. Reported: load-GB/s, pread-GB/s and their ratio.
func BenchmarkGPULoad2MiB(b *testing.B) {
	const batch, n, payload = 64, 128, 2 << 20
	d := mountUCM(b, mountOpts{Args: []string{"--gpu", "sim", "--memory", "1GiB"}})
	if err := os.Mkdir(d.path(gpuModel), 0o755); err != nil {
		b.Fatal(err)
	}
	ids := testIDs("gpu-bench", n)
	data := bytes.Repeat([]byte("0123456789abcdef"), payload/16)
	for _, id := range ids {
		bid, _ := format.ParseID(id)
		block := format.NewBlock(format.BlockHeader{ID: bid, NumLayers: 4, BlockSize: 16, Dtype: format.Float16}, data)
		if err := writeVerdict(blockPath(d.Mnt, gpuModel, id), block); err != nil {
			b.Fatal(err)
		}
	}
	region, err := os.CreateTemp("/dev/shm", "ucmfs-bench-region-")
	if err != nil {
		b.Skipf("no /dev/shm: %v", err)
	}
	defer os.Remove(region.Name())
	defer region.Close()
	if err := region.Truncate(batch * payload); err != nil {
		b.Fatal(err)
	}
	ctl, err := os.OpenFile(d.path(".ucm", "gpu"), os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer ctl.Close()
	answer := make([]byte, 4096)
	ask := func(req, want string) {
		if _, err := ctl.WriteString(req + "\n"); err != nil {
			b.Fatal(err)
		}
		k, err := ctl.Read(answer)
		if err != nil || !strings.HasPrefix(string(answer[:k]), want) {
			b.Fatalf("%.60q: %q, %v", req, answer[:k], err)
		}
	}
	ask(fmt.Sprintf("register sim %s %d", region.Name(), batch*payload), "ok region=1\n")
	var requests [n / batch]string
	for i := range requests {
		items := make([]string, batch)
		for j := range items {
			items[j] = fmt.Sprintf("%s:%d", ids[i*batch+j], j*payload)
		}
		requests[i] = "load 1 " + gpuModel + " " + strings.Join(items, " ")
	}
	fl, err := os.OpenFile(d.path(".ucm", "flush"), os.O_RDWR, 0) // no write-back while timing
	if err != nil {
		b.Fatal(err)
	}
	fl.WriteString("all\n")
	fl.Read(answer)
	fl.Close()
	buf := make([]byte, batch*payload)
	readBatch := func(r int) {
		for j := range batch {
			f, err := os.Open(blockPath(d.Mnt, gpuModel, ids[r*batch+j]))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.ReadAt(buf[j*payload:(j+1)*payload], format.HeaderSize); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}
	want := fmt.Sprintf("ok loaded=%d bytes=%d\n", batch, batch*payload)
	for r := range requests { // warm up: the region's pages, the kernel's entries
		ask(requests[r], want)
		readBatch(r)
	}
	got := make([]byte, payload)
	if _, err := region.ReadAt(got, (batch-1)*payload); err != nil || !bytes.Equal(got, data) || !bytes.Equal(buf[:payload], data) {
		b.Fatalf("the region or the buffer does not hold the payload: %v", err)
	}
	var st struct {
		Unmapped int64 `json:"gpu_load_unmapped"`
	}
	if raw, err := os.ReadFile(d.path(".ucm", "stats")); err != nil || json.Unmarshal(raw, &st) != nil {
		b.Fatalf("stats: %v", err)
	}
	if st.Unmapped != 0 { // mlock refused (ulimit -l): the loads read the files
		b.Logf("%d blocks loaded from files, not from the memory tier's mappings", st.Unmapped)
	}
	b.SetBytes(batch * payload)
	b.ResetTimer()
	var load, pread time.Duration
	for i := 0; i < b.N; i++ {
		r := i % len(requests)
		t0 := time.Now()
		ask(requests[r], want)
		t1 := time.Now()
		readBatch(r)
		load, pread = load+t1.Sub(t0), pread+time.Since(t1)
	}
	total := float64(b.N) * batch * payload
	b.ReportMetric(total/load.Seconds()/1e9, "load-GB/s")
	b.ReportMetric(total/pread.Seconds()/1e9, "pread-GB/s")
	b.ReportMetric(pread.Seconds()/load.Seconds(), "load/pread")
}
