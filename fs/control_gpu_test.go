package fs

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// TestGPULoad loads whole payloads, layer ranges and whole files, from
// memory and from the directory tier, into a sim region, and finds each
// at its offset and the guard bytes everywhere else.
func TestGPULoad(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	const per = 1000 // bytes per layer
	keys := make([]format.Key, 12)
	blocks := make([][]byte, len(keys))
	for i := range keys {
		keys[i], blocks[i] = gpuBlock(i, per)
		put(t, m.st, keys[i], blocks[i])
	}
	openCtl(t, m, "flush").mustOK("all")
	for _, k := range keys[8:] { // on the directory tier only
		if err := m.st.Evict(k); err != nil {
			t.Fatal(err)
		}
	}
	region := newSimRegion(t, 64<<10)
	c := openCtl(t, m, "gpu")
	r := region.register(c)

	var items []string
	off, total := 3, 0 // odd offsets: nothing is aligned
	add := func(i int, part string, b []byte) {
		item := fmt.Sprintf("%s:%d", keys[i].ID, off)
		if part != "" {
			item += ":" + part
		}
		items = append(items, item)
		region.expect(off, b)
		off += len(b) + 5
		total += len(b)
	}
	for i := range 4 {
		add(i, "", blocks[i][format.HeaderSize:])
	}
	add(4, "1-2", layers(blocks[4], 1, 2))
	add(5, "0-3", layers(blocks[5], 0, 3))
	add(6, "3", layers(blocks[6], 3, 3))
	add(7, "file", blocks[7])
	add(8, "", blocks[8][format.HeaderSize:])
	add(9, "2-3", layers(blocks[9], 2, 3))
	add(10, "0", layers(blocks[10], 0, 0))
	add(11, "file", blocks[11])
	a := c.mustOK("load " + r + " " + gpuModel + " " + strings.Join(items, " "))
	if want := fmt.Sprintf("ok loaded=12 bytes=%d", total); a != want {
		t.Fatalf("load: %q, want %q", a, want)
	}
	region.check("after the load")
	for _, k := range keys[8:] {
		if bi, err := m.st.Stat(k); err != nil || bi.Tier != tiers.Memory {
			t.Errorf("%s not promoted into memory by the load: %v", k, err)
		}
	}
	for _, k := range keys {
		if m.st.Pinned(k) {
			t.Errorf("%s still pinned after the load", k)
		}
	}
	st := readStats(t, m)
	if st.GPUDevice != "sim" || st.GPURegions != 1 || st.GPULoads != 1 || st.GPULoadBlocks != 12 || st.GPULoadBytes != int64(total) {
		t.Errorf("stats: %+v", st.ControlStats)
	}
	if m.st.Mapping(keys[0]) != nil && st.GPULoadUnmapped != 0 {
		t.Errorf("%d blocks loaded from files while the memory tier maps them", st.GPULoadUnmapped)
	}
	if st.Tiers[0].BytesOut != int64(total) {
		t.Errorf("memory tier bytes_out %d, want %d", st.Tiers[0].BytesOut, total)
	}

	// Items apply in order: of two on the same bytes the later wins.
	a = c.mustOK(fmt.Sprintf("load %s %s %s:40000 %s:40000", r, gpuModel, keys[0].ID, keys[1].ID))
	if !strings.HasPrefix(a, "ok loaded=2 ") {
		t.Fatalf("load: %q", a)
	}
	region.expect(40000, blocks[1][format.HeaderSize:])
	region.check("after two loads on the same bytes")
}

// TestGPULoadUnmapped: a block the memory tier holds without a mapping
// (mapping budget spent) is read from its file; same bytes.
func TestGPULoadUnmapped(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	k, b := gpuBlock(1, 4096)
	put(t, m.st, k, b)
	region := newSimRegion(t, 32<<10)
	c := openCtl(t, m, "gpu")
	r := region.register(c)
	// The block is on nvme only, and memory is full of pinned blocks (as
	// loads pin them; users' pins stop at half of it):
	// the load cannot promote it and reads it from its file there.
	openCtl(t, m, "flush").mustOK("all")
	if err := m.st.Evict(k); err != nil {
		t.Fatal(err)
	}
	for i := 0; memRoom(m.st) >= int64(len(b)); i++ {
		fill := min(1<<20, memRoom(m.st)-int64(len(b))/2)
		pk, pb := gpuBlock(1000+i, int((fill-format.HeaderSize)/gpuLayers)&^1)
		put(t, m.st, pk, pb)
		if err := m.st.SetPinned(pk, true); err != nil { // past --max-pinned, as GPU loads pin
			t.Fatal(err)
		}
	}
	openCtl(t, m, "flush").mustOK("all")
	c.mustOK(fmt.Sprintf("load %s %s %s:7:1-3", r, gpuModel, k.ID))
	region.expect(7, layers(b, 1, 3))
	region.check("load from the file")
	if st := readStats(t, m); st.GPULoadUnmapped != 1 {
		t.Errorf("gpu_load_unmapped %d, want 1", st.GPULoadUnmapped)
	}
	if bi, err := m.st.Stat(k); err != nil || bi.Tier == tiers.Memory {
		t.Errorf("the block went into full memory: %v", err)
	}
}

// TestGPUDump publishes blocks from a region: readable through the mount,
// valid, already-present ids counted, and a bad item publishes nothing.
func TestGPUDump(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	region := newSimRegion(t, 128<<10)
	keys := make([]format.Key, 8)
	blocks := make([][]byte, len(keys))
	offs := make([]int, len(keys))
	for i := range keys {
		keys[i], blocks[i] = gpuBlock(100+i, 2000)
		offs[i] = 1 + i*9000
		region.write(offs[i], blocks[i])
	}
	item := func(i int) string { return fmt.Sprintf("%s:%d:%d", keys[i].ID, offs[i], len(blocks[i])) }
	// A lookup before the dump leaves a miss in the kernel's cache.
	if _, err := os.Stat(m.keyPath(keys[0])); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("before the dump: %v", err)
	}
	c := openCtl(t, m, "gpu")
	r := region.register(c)
	if a := c.mustOK("dump " + r + " " + gpuModel + " " + item(0) + " " + item(1) + " " + item(2)); a != "ok dumped=3 existing=0" {
		t.Fatalf("dump: %q", a)
	}
	for i := range 3 {
		got, err := os.ReadFile(m.keyPath(keys[i]))
		if err != nil || string(got) != string(blocks[i]) {
			t.Fatalf("block %d through the mount: %d bytes, %v", i, len(got), err)
		}
		if err := format.VerifyFile(m.keyPath(keys[i])); err != nil {
			t.Errorf("block %d: %v", i, err)
		}
	}
	if a := c.mustOK("dump " + r + " " + gpuModel + " " + item(1) + " " + item(3)); a != "ok dumped=1 existing=1" {
		t.Fatalf("second dump: %q", a)
	}

	// A corrupt block (one payload byte flipped) fails the request; the
	// valid new block before it is not published either.
	bad := append([]byte(nil), blocks[5]...)
	bad[len(bad)-1] ^= 0xff
	region.write(offs[5], bad)
	a := c.ask("dump " + r + " " + gpuModel + " " + item(4) + " " + item(5))
	if errnoOfAnswer(a) != "EINVAL" || !strings.Contains(a, keys[5].ID.String()) {
		t.Fatalf("corrupt block: %q", a)
	}
	// Bytes of another block under this id: the header's id differs.
	a = c.ask(fmt.Sprintf("dump %s %s %s:%d:%d", r, gpuModel, keys[6].ID, offs[7], len(blocks[7])))
	if errnoOfAnswer(a) != "EINVAL" {
		t.Fatalf("mismatched id: %q", a)
	}
	for _, i := range []int{4, 5, 6, 7} {
		if m.st.Has(keys[i]) {
			t.Errorf("block %d published by a failed dump", i)
		}
	}
	region.check("dumps read the region only")
	st := readStats(t, m)
	if st.GPUDumps != 2 || st.GPUDumpBlocks != 4 || st.GPUDumpExisting != 1 || st.GPUDumpBytes != 4*int64(len(blocks[0])) {
		t.Errorf("stats: %+v", st.ControlStats)
	}
	if st.Published != 4 || st.Tiers[0].BytesIn != 4*int64(len(blocks[0])) {
		t.Errorf("published %d, memory bytes_in %d", st.Published, st.Tiers[0].BytesIn)
	}

	// What was dumped loads back, as a whole file.
	c.mustOK(fmt.Sprintf("load %s %s %s:100000:file", r, gpuModel, keys[3].ID))
	region.expect(100000, blocks[3])
	region.check("load of a dumped block")
}
