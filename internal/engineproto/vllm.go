package engineproto

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// VLLM is vLLM's fs offloading tier (vllm/v1/kv_offload/tiering/fs: io.py,
// file_mapper.py, evictor.py) over Root: config.json in
// <root>/<model>_<12hex>/, blocks at
// <root>/<model>_<12hex>_r<rank>/<h[0:3]>/<h[3:5]>_g<group>/<h>.bin, a
// store to <final>_<rand>.tmp opened O_CREAT|O_EXCL|O_WRONLY|O_TRUNC
// (|O_DIRECT after the start's probe) and replaced over the final name,
// a load by readv (O_DIRECT) whose short read removes the file, a lookup
// by stat, a delete by remove.
type VLLM struct {
	Root, Salt string
	Model      string // safe model name ('/' made '_')
	Rank       int
	Direct     bool // use O_DIRECT when the probe says it works
	base       string
	suffix     string
	odirect    bool
}

// Name names the backend.
func (v *VLLM) Name() string { return "vllm-fs" }

// Setup writes the run config (no-op when present) and probes O_DIRECT
// with a page written to .o_direct_probe_<rand>.tmp, then removed.
func (v *VLLM) Setup() error {
	v.base = filepath.Join(v.Root, v.Model+"_"+hash64(v.Salt, -1)[:12])
	v.suffix = "_" + randSuffix() + ".tmp"
	if err := makedirs(v.base); err != nil {
		return err
	}
	cfg := filepath.Join(v.base, "config.json")
	if ok, err := exists(cfg); err != nil {
		return err
	} else if !ok {
		// open(target, "w") and json.dump: a buffered file, written at close.
		if err := os.WriteFile(cfg, []byte(`{"model_name": "`+v.Model+`", "tp_size": 1}`), 0o666); err != nil {
			return err
		}
	}
	v.odirect = v.Direct && v.probe()
	return nil
}

// probe is probe_o_direct.
func (v *VLLM) probe() bool {
	p := filepath.Join(v.Root, ".o_direct_probe"+v.suffix)
	defer os.Remove(p)
	fd, err := unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC|unix.O_DIRECT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	page := alignedBuf(4096)
	defer unix.Munmap(page)
	_, err = unix.Write(fd, page)
	return err == nil
}

// Path is get_file_name of block i (group 0).
func (v *VLLM) Path(i int) string {
	h := hash64(v.Salt, i)
	return fmt.Sprintf("%s_r%d/%s/%s_g0/%s.bin", v.base, v.Rank, h[:3], h[3:5], h)
}

// Exists is the NoOpEvictor's lookup: os.path.exists.
func (v *VLLM) Exists(i int) (bool, error) { return exists(v.Path(i)) }

// Store is store_block. vLLM writes straight from its CPU tier's
// buffer (pinned, page-aligned memory, allocated once): data written with
// O_DIRECT is used as it is when it is page-aligned (AlignedBuf), as
// vLLM's; an unaligned slice is first copied into memory mapped for the
// call, a step of the replay's own that vLLM does not take.
func (v *VLLM) Store(i int, data []byte) error {
	dest := v.Path(i)
	if ok, err := exists(dest); err != nil || ok {
		return err
	}
	tmp := dest + v.suffix
	if err := makedirs(parent(dest)); err != nil {
		return err
	}
	fl := unix.O_CREAT | unix.O_EXCL | unix.O_WRONLY | unix.O_TRUNC | unix.O_CLOEXEC
	buf := data
	if v.odirect {
		fl |= unix.O_DIRECT
		if !aligned(data) {
			buf = alignedBuf(len(data))
			defer unix.Munmap(buf)
			copy(buf, data)
		}
	}
	fd, err := unix.Open(tmp, fl, 0o644)
	if err == nil {
		var n int
		n, err = unix.Write(fd, buf)
		if err == nil && n < len(buf) {
			err = fmt.Errorf("short write: %d of %d", n, len(buf))
		}
		unix.Close(fd)
	}
	if err == nil {
		err = unix.Rename(tmp, dest)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store %s: %w", dest, err)
	}
	return nil
}

// Load is load_block of n bytes into memory mapped for the call; it
// returns a copy of them.
func (v *VLLM) Load(i, n int) ([]byte, error) {
	buf := alignedBuf(n)
	defer unix.Munmap(buf)
	if err := v.LoadInto(i, buf); err != nil {
		return nil, err
	}
	return bytes.Clone(buf), nil
}

// LoadInto is load_block into view, a slice of vLLM's CPU tier
// (page-aligned for O_DIRECT: AlignedBuf): open (O_DIRECT), one readv of
// len(view) bytes; on any failure the file is removed.
func (v *VLLM) LoadInto(i int, view []byte) error {
	src := v.Path(i)
	fl := unix.O_RDONLY | unix.O_CLOEXEC
	if v.odirect {
		fl |= unix.O_DIRECT
	}
	fd, err := unix.Open(src, fl, 0)
	if err == nil {
		var r int
		r, err = unix.Readv(fd, [][]byte{view})
		unix.Close(fd)
		if err == nil && r < len(view) {
			err = fmt.Errorf("short read: expected %d bytes, read %d", len(view), r)
		}
	}
	if err != nil {
		os.Remove(src)
		return fmt.Errorf("load %s: %w", src, err)
	}
	return nil
}

// Delete is the LRU evictor's os.remove.
func (v *VLLM) Delete(i int) error {
	err := os.Remove(v.Path(i))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
