package files

import (
	"testing"

	"github.com/ucmfs/ucmfs/format"
)

// TestStagingNames: the engines' temporary names are staging names;
// their final names are not.
func TestStagingNames(t *testing.T) {
	for _, n := range []string{
		"abc.bin_8812345.tmp",                  // vLLM, llm-d
		"m@0x0@ab.tmp",                         // LMCache
		"ab_m_0_1.bin.tmp.12.140.0123456789ab", // SGLang
		".blk.bin.a1B2c3",                      // rsync
		"0123456789abcdef0123456789abcdef.tmp", // UCM
		".ucm_gc.config.tmp.host.12.00ff00ff",  // UCM's GC config
		".o_direct_probe_99.tmp",               // vLLM's probe
	} {
		if !StagingName(n) {
			t.Errorf("%q is not a staging name", n)
		}
	}
	for _, n := range []string{"abc.bin", "config.json", "m@0x0@ab.data", ".lock", "tmp", "x.tmpl", ".hidden", ".ucm_gc.config", ".ucm_gc.members", ".tmp-foo", ".tmp-a@1-b"} {
		if StagingName(n) {
			t.Errorf("%q is a staging name", n)
		}
	}
}

// TestKeptFiles: an engine's own files are kept, its blocks are not.
func TestKeptFiles(t *testing.T) {
	for _, n := range []string{"m_0123/config.json", ".lock", "log/12/ucm.log", "a/.ucm_gc.checktime"} {
		if !KeptFile(format.FileKey("e", n)) {
			t.Errorf("%q is not kept", n)
		}
	}
	for _, n := range []string{"m_0123_r0/abc/de_g0/ff.bin", "m@0x0@ab.data", "namespace-1/p_m_0_1.bin"} {
		if KeptFile(format.FileKey("e", n)) {
			t.Errorf("%q is kept", n)
		}
	}
	if KeptFile(format.Key{Model: "e", Kind: format.Block}) {
		t.Error("a ucmb block is kept")
	}
}
