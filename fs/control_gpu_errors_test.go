package fs

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestGPUErrors: every malformed or refused request gets one err line
// with its errno, copies nothing (the region keeps its guard bytes),
// and the session serves the next request.
func TestGPUErrors(t *testing.T) {
	m := newGPUMount(t, nil, Options{})
	const size = 16 << 10
	k, b := gpuBlock(1, 1000)
	put(t, m.st, k, b)
	k2, b2 := gpuBlock(2, 1000)
	put(t, m.st, k2, b2)
	absent, _ := gpuBlock(3, 1000)
	region := newSimRegion(t, size)
	c := openCtl(t, m, "gpu")
	r := region.register(c)
	dir := t.TempDir()
	small := dir + "/small"
	if err := os.WriteFile(small, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	id, id2 := k.ID.String(), k2.ID.String()
	payload := len(b) - format.HeaderSize
	load := func(items ...string) string {
		return "load " + r + " " + gpuModel + " " + strings.Join(items, " ")
	}
	for _, tc := range []struct{ req, errno string }{
		{"frobnicate", "EINVAL"},
		{"load", "EINVAL"},
		{"load x", "EINVAL"},
		{"load 99 " + gpuModel + " " + id + ":0", "EBADF"},
		{"load " + r, "EINVAL"},
		{"load " + r + " no-such-model " + id + ":0", "ENOENT"},
		{"load " + r + " bad/model " + id + ":0", "EINVAL"},
		{load(), "EINVAL"},
		{load(id), "EINVAL"},
		{load("zz:0"), "EINVAL"},
		{load(id + ":"), "EINVAL"},
		{load(id + ":-1"), "EINVAL"},
		{load(id + ":+1"), "EINVAL"},
		{load(id + ":abc"), "EINVAL"},
		{load(id + ":99999999999999999999"), "EINVAL"},
		{load(id + ":0:3-1"), "EINVAL"},
		{load(id + ":0:1-"), "EINVAL"},
		{load(id + ":0:x"), "EINVAL"},
		{load(id + ":0:4"), "EINVAL"},   // the block has layers 0-3
		{load(id + ":0:0-9"), "EINVAL"}, // idem
		// One bad item fails the request before any byte is copied.
		{load(id+":0", absent.ID.String()+":5000", id2+":9000"), "ENOENT"},
		{load(id+":0", id2+fmt.Sprint(":", size-payload+1)), "EINVAL"},
		{load(id+":0", id2+fmt.Sprint(":", size)), "EINVAL"},
		{load(id+":0", id2+":9223372036854775807"), "EINVAL"},
		{load(id+":0", id2+fmt.Sprint(":", size-len(b)+1, ":file")), "EINVAL"},
		{"dump " + r + " " + gpuModel, "EINVAL"},
		{"dump " + r + " " + gpuModel + " " + id + ":0", "EINVAL"},
		{"dump " + r + " " + gpuModel + " " + absent.ID.String() + ":0:63", "EINVAL"},
		{"dump " + r + " " + gpuModel + " " + absent.ID.String() + fmt.Sprint(":1:", size), "EINVAL"},
		{"dump " + r + " " + gpuModel + " " + absent.ID.String() + ":0:2000000000", "EFBIG"},
		{"dump " + r + " " + gpuModel + " " + absent.ID.String() + ":0:1000", "EINVAL"}, // guard bytes are no block
		{"dump 7 " + gpuModel + " " + absent.ID.String() + ":0:1000", "EBADF"},
		{"register", "EINVAL"},
		{"register tpu x 1", "EINVAL"},
		{"register sim", "EINVAL"},
		{"register sim " + small, "EINVAL"},
		{"register sim " + small + " many", "EINVAL"},
		{"register sim " + small + " 101", "EINVAL"},
		{"register sim " + small + " 10 offset=91", "EINVAL"},
		{"register sim " + small + " 10 offset=x", "EINVAL"},
		{"register sim " + small + " 10 device=1", "EINVAL"},
		{"register sim " + dir + "/none 10", "ENOENT"},
		{"register sim " + dir + " 10", "EISDIR"},
		{"register cuda " + strings.Repeat("ab", 64) + " 10", "ENODEV"},
		{"unregister", "EINVAL"},
		{"unregister 42", "EBADF"},
		{"unregister " + r + " extra", "EINVAL"},
	} {
		a := c.ask(tc.req)
		if errnoOfAnswer(a) != tc.errno {
			t.Errorf("%q: %q, want err %s", clip([]byte(tc.req)), a, tc.errno)
		}
	}
	region.check("after the refused requests")
	if a := c.mustOK("register sim " + small + " 10 offset=90"); a != "ok region=2" {
		t.Errorf("a region at the end of a file: %q", a)
	}
	c.mustOK(load(id+":0", id2+fmt.Sprint(":", size-payload)))
	region.expect(0, b[format.HeaderSize:])
	region.expect(size-payload, b2[format.HeaderSize:])
	region.check("the session after its errors")
	if st := readStats(t, m); st.ControlErrors == 0 || st.GPULoads != 1 || st.Published != 2 {
		t.Errorf("stats: control errors %d, loads %d, published %d", st.ControlErrors, st.GPULoads, st.Published)
	}
}
