package fs

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/transfer"
)

// TestGPUSessions: a region belongs to the session that registered it and
// goes when its descriptor is released.
func TestGPUSessions(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	k, b := gpuBlock(1, 100)
	put(t, m.st, k, b)
	region := newSimRegion(t, 4096)
	c1 := openCtl(t, m, "gpu")
	c2 := openCtl(t, m, "gpu")
	r1 := region.register(c1)
	load := fmt.Sprintf("load %s %s %s:0", r1, gpuModel, k.ID)
	if a := c2.ask(load); errnoOfAnswer(a) != "EBADF" {
		t.Errorf("another session's region: %q", a)
	}
	if r2 := region.register(c2); r2 != r1 {
		t.Errorf("the second session's first region is %s, want %s (numbers are per session)", r2, r1)
	}
	if st := readStats(t, m); st.GPURegions != 2 {
		t.Errorf("gpu_regions %d, want 2", st.GPURegions)
	}
	c1.f.Close()
	for deadline := time.Now().Add(time.Minute); readStats(t, m).GPURegions != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) { // the kernel releases a closed descriptor in the background
			t.Fatal("the closed session's region is still registered")
		}
	}
	c2.mustOK("unregister " + r1)
	if a := c2.ask(load); errnoOfAnswer(a) != "EBADF" {
		t.Errorf("after unregister: %q", a)
	}
	for i := range transfer.MaxRegions {
		if a := c2.ask(fmt.Sprintf("register sim %s 64", region.path)); !strings.HasPrefix(a, "ok region=") {
			t.Fatalf("registration %d: %q", i+1, a)
		}
	}
	if a := c2.ask(fmt.Sprintf("register sim %s 64", region.path)); errnoOfAnswer(a) != "EMFILE" {
		t.Errorf("registration past the limit: %q", a)
	}
	if st := readStats(t, m); st.GPURegions != transfer.MaxRegions {
		t.Errorf("gpu_regions %d, want %d", st.GPURegions, transfer.MaxRegions)
	}
}

// TestGPURegionsPerUser: one uid holds at most MaxRegionsPerUser regions
// across all its sessions: the register past it is EMFILE in a session
// that holds none, and an unregister in another session gives a place
// back.
func TestGPURegionsPerUser(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	region := newSimRegion(t, 4096)
	var sessions []*ctl
	for range transfer.MaxRegionsPerUser / transfer.MaxRegions {
		c := openCtl(t, m, "gpu")
		for i := range transfer.MaxRegions {
			if a := c.ask(fmt.Sprintf("register sim %s 64", region.path)); !strings.HasPrefix(a, "ok region=") {
				t.Fatalf("session %d, registration %d: %q", len(sessions)+1, i+1, a)
			}
		}
		sessions = append(sessions, c)
	}
	fresh := openCtl(t, m, "gpu")
	reg := fmt.Sprintf("register sim %s 64", region.path)
	if a := fresh.ask(reg); errnoOfAnswer(a) != "EMFILE" || !strings.Contains(a, "in its sessions") {
		t.Errorf("region %d of one uid, in a new session: %q, want EMFILE", transfer.MaxRegionsPerUser+1, a)
	}
	sessions[0].mustOK("unregister 1")
	if a := fresh.ask(reg); !strings.HasPrefix(a, "ok region=") {
		t.Errorf("after an unregister in another session: %q", a)
	}
	if st := readStats(t, m); st.GPURegions != transfer.MaxRegionsPerUser {
		t.Errorf("gpu_regions %d, want %d", st.GPURegions, transfer.MaxRegionsPerUser)
	}
}

// TestGPUNoDevice: without Options.GPU the mount has no .ucm/gpu.
func TestGPUNoDevice(t *testing.T) {
	m := newMount(t, Options{})
	if _, err := os.Stat(m.path(".ucm", "gpu")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf(".ucm/gpu without a device: %v", err)
	}
}

// TestGPULoadWhileRemoving: unlinks and rewrites of blocks race with
// loads of them; every load either copies the whole blocks or finds one
// gone (ENOENT), never a fault from a mapping unmapped under it.
func TestGPULoadWhileRemoving(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	keys := make([]format.Key, 8)
	blocks := make([][]byte, len(keys))
	items := make([]string, len(keys))
	region := newSimRegion(t, len(keys)*300<<10)
	for i := range keys {
		keys[i], blocks[i] = gpuBlock(i, 64<<10)
		put(t, m.st, keys[i], blocks[i])
		items[i] = fmt.Sprintf("%s:%d:file", keys[i].ID, i*300<<10)
		region.expect(i*300<<10, blocks[i])
	}
	c := openCtl(t, m, "gpu")
	req := "load " + region.register(c) + " " + gpuModel + " " + strings.Join(items, " ")
	done := make(chan error)
	go func() {
		for round := range 40 {
			k := keys[round%len(keys)]
			if err := os.Remove(m.keyPath(k)); err != nil {
				done <- err
				return
			}
			if err := writeFile(m.keyPath(k), blocks[round%len(keys)]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		a := c.ask(req)
		if !strings.HasPrefix(a, "ok loaded=8 ") && errnoOfAnswer(a) != "ENOENT" {
			t.Fatalf("a load racing with removals: %q", a)
		}
		if strings.HasPrefix(a, "ok") {
			region.check("a load racing with removals")
		}
	}
	region.check("after the race")
	for _, k := range keys {
		if m.st.Pinned(k) {
			t.Errorf("%s left pinned", k)
		}
	}
}

// TestGPUMetrics: loads and dumps move the gpu counters and the load and
// dump latency histograms of the Prometheus endpoint.
func TestGPUMetrics(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	srv := httptest.NewServer(m.metricsHandler())
	defer srv.Close()
	k, b := gpuBlock(1, 1000)
	put(t, m.st, k, b)
	k2, b2 := gpuBlock(2, 1000)
	region := newSimRegion(t, 64<<10)
	region.write(20000, b2)
	c := openCtl(t, m, "gpu")
	r := region.register(c)
	c.mustOK(fmt.Sprintf("load %s %s %s:0 %s:10000:0", r, gpuModel, k.ID, k.ID))
	c.mustOK(fmt.Sprintf("dump %s %s %s:20000:%d %s:0:%d", r, gpuModel, k2.ID, len(b2), k.ID, len(b)))
	got := scrape(t, srv.URL+"/metrics")
	payload := float64(len(b) - format.HeaderSize)
	for name, want := range map[string]float64{
		"ucm_gpu_regions":             1,
		"ucm_gpu_load_requests_total": 1,
		"ucm_gpu_load_blocks_total":   2,
		"ucm_gpu_load_bytes_total":    payload * 5 / 4,
		"ucm_load_seconds_count":      1,
		"ucm_gpu_dump_requests_total": 1,
		"ucm_gpu_dump_blocks_total":   1,
		"ucm_gpu_dump_existing_total": 1,
		"ucm_gpu_dump_bytes_total":    float64(len(b2)),
		"ucm_dump_seconds_count":      1,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
}
