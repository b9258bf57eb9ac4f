package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The expected ids were computed with Python's hashlib (docs/format.md).
const (
	llamaMeta  = "meta-llama/Llama-3.1-8B:1:bfloat16:0"
	hashGolden = "0 569d97e717439e91327f78b6bd995559 56/569d97e717439e91327f78b6bd995559.bin\n" +
		"1 587a92f328ceeef39b1f7930aeac4775 58/587a92f328ceeef39b1f7930aeac4775.bin\n"
	hashWide = "0 d156f97b647f2c2283e9937e42111eb6 d1/d156f97b647f2c2283e9937e42111eb6.bin\n" +
		"1 fe9a89973c26ccb0c15a7c44e6c21297 fe/fe9a89973c26ccb0c15a7c44e6c21297.bin\n" +
		"2 fe11fa839f5dbe2099ec497987b3e31d fe/fe11fa839f5dbe2099ec497987b3e31d.bin\n" +
		"3 0157b0468367bd7d6faa9645fada2bb5 01/0157b0468367bd7d6faa9645fada2bb5.bin\n"
)

func TestHashGolden(t *testing.T) {
	code, out, errs := runMain(t, "hash", "--meta", llamaMeta, "--block-size", "4", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	if code != 0 || out != hashGolden || errs != "" {
		t.Fatalf("hash: %d\n%s%s", code, out, errs)
	}
	// The same meta from its parts (world size 1 and rank 0 by default).
	code, out, _ = runMain(t, "hash", "--model", "meta-llama/Llama-3.1-8B", "--dtype", "bfloat16",
		"--block-size", "4", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
	if code != 0 || out != hashGolden {
		t.Fatalf("hash --model: %d\n%s", code, out)
	}
}

func TestHashWideTokens(t *testing.T) {
	// Token ids above 255 and 65535, up to 2^32-1, each 4 bytes little-endian.
	args := []string{"hash", "--meta", llamaMeta, "--block-size", "2", "0", "255", "256", "65535", "65536", "128000", "4294967295", "7"}
	if code, out, errs := runMain(t, args...); code != 0 || out != hashWide {
		t.Fatalf("hash: %d\n%s%s", code, out, errs)
	}
	// From a file, any whitespace, plus a partial block that gets no id.
	file := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(file, []byte("0 255\n256\t65535\n\n  65536 128000\r\n4294967295 7 99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runMain(t, "hash", "--meta", llamaMeta, "--block-size", "2", "--tokens-file", file); code != 0 || out != hashWide {
		t.Fatalf("hash --tokens-file: %d\n%s%s", code, out, errs)
	}
	// Other parts give other ids: rank is part of the meta.
	_, out, _ := runMain(t, "hash", "--model", "meta-llama/Llama-3.1-8B", "--dtype", "bfloat16", "--world-size", "2", "--rank", "1",
		"--block-size", "2", "0", "255")
	if out == "" || out[:40] == hashWide[:40] {
		t.Fatalf("rank 1 of 2 gave %q", out)
	}
}

func TestHashPartialBlock(t *testing.T) {
	if code, out, errs := runMain(t, "hash", "--meta", llamaMeta, "--block-size", "16", "1", "2", "3"); code != 0 || out != "" || errs != "" {
		t.Fatalf("partial block: %d %q %q", code, out, errs)
	}
}

func TestHashBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.txt")
	cases := map[string][]string{
		"no block size":       {"--meta", llamaMeta, "1"},
		"block size 0":        {"--meta", llamaMeta, "--block-size", "0", "1"},
		"block size -1":       {"--meta", llamaMeta, "--block-size", "-1", "1"},
		"block size text":     {"--meta", llamaMeta, "--block-size", "four", "1"},
		"no meta":             {"--block-size", "1", "1"},
		"model without dtype": {"--model", "m", "--block-size", "1", "1"},
		"meta and model":      {"--meta", llamaMeta, "--model", "m", "--dtype", "float16", "--block-size", "1", "1"},
		"rank >= world size":  {"--model", "m", "--dtype", "float16", "--world-size", "2", "--rank", "2", "--block-size", "1", "1"},
		"world size 0":        {"--model", "m", "--dtype", "float16", "--world-size", "0", "--block-size", "1", "1"},
		"token too large":     {"--meta", llamaMeta, "--block-size", "1", "4294967296"},
		"negative token":      {"--meta", llamaMeta, "--block-size", "1", "--", "-1"},
		"token not a number":  {"--meta", llamaMeta, "--block-size", "1", "12x"},
		"hex token":           {"--meta", llamaMeta, "--block-size", "1", "0x10"},
		"no tokens":           {"--meta", llamaMeta, "--block-size", "1"},
		"file and args":       {"--meta", llamaMeta, "--block-size", "1", "--tokens-file", missing, "1"},
		"missing file":        {"--meta", llamaMeta, "--block-size", "1", "--tokens-file", missing},
		"unknown flag":        {"--meta", llamaMeta, "--block-size", "1", "--bogus", "x", "1"},
	}
	for name, args := range cases {
		code, out, errs := runMain(t, append([]string{"hash"}, args...)...)
		if code != exitUsage || out != "" || errs == "" {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want 2, nothing, a message", name, code, out, errs)
		}
	}
}

// TestHashBadMeta: a meta the mount would never match (a typo in its
// dtype, a world size or rank that is no number, a missing field) is a
// usage error naming the field, not ids printed with status 0.
func TestHashBadMeta(t *testing.T) {
	cases := map[string]struct{ args []string }{
		"x":                       {[]string{"--meta", "x"}},
		"world size not a number": {[]string{"--meta", "demo/M:one:bfloat16:0"}},
		"dtype typo":              {[]string{"--meta", "demo/M:1:bflaot16:0"}},
		"rank not a number":       {[]string{"--meta", "demo/M:1:bfloat16:r"}},
		"rank >= world size":      {[]string{"--meta", "demo/M:2:bfloat16:2"}},
		"no model":                {[]string{"--meta", ":1:bfloat16:0"}},
		"--dtype typo":            {[]string{"--model", "demo/M", "--dtype", "bflaot16"}},
		"ucm dtype typo":          {[]string{"--scheme", "ucm", "--meta", "demo/M:1:torch.bflaot16:0"}},
		"ucm dtype no torch.":     {[]string{"--scheme", "ucm", "--meta", "demo/M:1:bfloat16:0"}},
	}
	for name, c := range cases {
		code, out, errs := runMain(t, append(append([]string{"hash"}, c.args...), "--block-size", "1", "1")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "meta") {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want 2, nothing, a message on the meta", name, code, out, errs)
		}
	}
	code, _, errs := runMain(t, "hash", "--meta", "demo/M:1:bflaot16:0", "--block-size", "1", "1")
	if code != exitUsage || !strings.Contains(errs, `DTYPE "bflaot16"`) || !strings.Contains(errs, "bfloat16") {
		t.Errorf("a dtype typo: %d %q; want the field named and the dtypes listed", code, errs)
	}
	// Every dtype a header takes, and a model name with colons, pass.
	for _, meta := range []string{"a/b:1:float8_e4m3fn:0", "/models/x:y:4:float16:3"} {
		if code, out, errs := runMain(t, "hash", "--meta", meta, "--block-size", "1", "1"); code != 0 || out == "" {
			t.Errorf("%s: %d %q", meta, code, errs)
		}
	}
}
