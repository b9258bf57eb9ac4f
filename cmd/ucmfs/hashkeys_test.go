package main

import (
	"strings"
	"testing"
)

// tokens1to10 are the tokens of the golden vectors: 1..10.
var tokens1to10 = strings.Fields("1 2 3 4 5 6 7 8 9 10")

func hashLines(ids ...string) string {
	var b strings.Builder
	for i, id := range ids {
		b.WriteString(strings.Join([]string{itoa(i), id, id[:2] + "/" + id + ".bin"}, " ") + "\n")
	}
	return b.String()
}

func itoa(i int) string { return string(rune('0' + i)) }

// TestHashExtraKeys checks the flags against the vectors of
// format/keys_test.go (computed with the Python of docs/format.md §2.1).
func TestHashExtraKeys(t *testing.T) {
	base := []string{"hash", "--meta", llamaMeta, "--block-size", "4"}
	cases := []struct {
		name  string
		flags []string
		want  string
	}{
		{"salt x", []string{"--salt", "x"}, hashLines("61cc9a136b8286c70f44026e96e8e5cd", "f5e04e397222ead1120c3fd14ec7e3fe")},
		{"lora x", []string{"--lora", "x"}, hashLines("3ef57efff12218ff82433d66ae8b6343", "f3325880a7473cbeb148d27bf8f49944")},
		{"mm img@5", []string{"--mm", "img@5"}, hashLines("569d97e717439e91327f78b6bd995559", "225bcd81380428db234fa27bd5d8a0ef")},
		{"all", []string{"--salt", "tenant-a", "--lora", "sql-adapter", "--mm", "f00d@6", "--mm", "cafe@1",
			"--embeds", "", "--embeds", "e1", "--group", "2"},
			"2 " + strings.ReplaceAll(hashLines("dcfa7f7f632b055fff373290a6caee00", "566fa14f3c62d30b734cf32e836c3d75"), "\n1 ", "\n2 1 ")},
		{"empty salt is no salt", []string{"--salt", ""}, hashGolden},
	}
	for _, c := range cases {
		code, out, errs := runMain(t, append(append(append([]string{}, base...), c.flags...), tokens1to10...)...)
		if code != 0 || out != c.want {
			t.Errorf("%s: status %d\n%s%s want\n%s", c.name, code, out, errs, c.want)
		}
	}
}

// TestHashGroups checks one id list per group, each at its block size,
// and --state-at.
func TestHashGroups(t *testing.T) {
	base := []string{"hash", "--meta", llamaMeta, "--block-size", "4"}
	_, out, _ := runMain(t, append(append(base, "--group", "0", "--group", "1", "--group", "3:2"), tokens1to10...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{
		"0 0 d6e4281584dc1fbd4b573df84f2df3cc", "0 1 b8c7775669de05c372973928f083abf5",
		"1 0 0d4de64d103ed99926b0c66b0f374f3c", "1 1 3612907df674e015fefd3f6f58eb4f16",
		"3 0 ", "3 1 ", "3 2 ", "3 3 ", "3 4 ",
	}
	if len(lines) != len(want) {
		t.Fatalf("groups printed\n%s", out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start with %q", i, lines[i], w)
		}
	}
	// The state at token 8: the block ending there, in every group.
	_, out, _ = runMain(t, append(append(base, "--group", "1", "--group", "3:2", "--state-at", "8"), tokens1to10...)...)
	if got := strings.Split(strings.TrimSpace(out), "\n"); len(got) != 2 ||
		got[0] != lines[3] || got[1] != lines[7] {
		t.Errorf("--state-at 8 printed\n%s", out)
	}
	_, out, _ = runMain(t, append(append(base, "--state-at", "4"), tokens1to10...)...)
	if out != strings.Split(hashGolden, "\n")[0]+"\n" {
		t.Errorf("--state-at 4 printed %q", out)
	}
}

// TestHashSchemeUCM checks UCM's ids (format/ucm_test.go's vectors,
// computed with Python's pickle) for ranks 0 and 1.
func TestHashSchemeUCM(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"rank 0", []string{"--meta", "meta-llama/Llama-3.1-8B:1:torch.bfloat16:0"},
			hashLines("70d041f7bf6e6481271587bc0a8ee4d3", "969255022c1273531fb7cd54f9e5fec2")},
		{"parts, torch. added", []string{"--model", "meta-llama/Llama-3.1-8B", "--dtype", "bfloat16"},
			hashLines("70d041f7bf6e6481271587bc0a8ee4d3", "969255022c1273531fb7cd54f9e5fec2")},
		{"tp 2 rank 0", []string{"--meta", "meta-llama/Llama-3.1-8B:2:torch.bfloat16:0"},
			hashLines("628c1e0d4e7e6829589e0eaf749dd8c5", "db0a889e312cf9372b778649c4d5774f")},
		{"tp 2 rank 1", []string{"--meta", "meta-llama/Llama-3.1-8B:2:torch.bfloat16:1"},
			hashLines("3d8389ffc4e6e43e56ef833ae322409e", "48a08eecf7f2496100304c63fdd0a9c9")},
		{"tp 2 rank 1 mla", []string{"--meta", "meta-llama/Llama-3.1-8B:2:torch.bfloat16:1", "--mla"},
			hashLines("628c1e0d4e7e6829589e0eaf749dd8c5", "db0a889e312cf9372b778649c4d5774f")},
	}
	for _, c := range cases {
		args := append(append([]string{"hash", "--scheme", "ucm", "--block-size", "4"}, c.args...), tokens1to10...)
		if code, out, errs := runMain(t, args...); code != 0 || out != c.want {
			t.Errorf("%s: status %d\n%s%s want\n%s", c.name, code, out, errs, c.want)
		}
	}
}

func TestHashKeysBadInput(t *testing.T) {
	cases := map[string][]string{
		"unknown scheme":     {"--scheme", "vllm"},
		"mla without ucm":    {"--mla"},
		"ucm with salt":      {"--scheme", "ucm", "--salt", "x"},
		"ucm with group":     {"--scheme", "ucm", "--group", "1"},
		"ucm meta not 4":     {"--scheme", "ucm", "--meta", "m:1:x"},
		"mm without offset":  {"--mm", "abc"},
		"mm bad offset":      {"--mm", "abc@x"},
		"group negative":     {"--group", "-1"},
		"group bad size":     {"--group", "1:0"},
		"group twice":        {"--group", "1", "--group", "1:2"},
		"state-at 0":         {"--state-at", "0"},
		"state-at mid-block": {"--state-at", "6"},
		"state-at past end":  {"--state-at", "12"},
		"state-at mid-group": {"--group", "0:3", "--state-at", "4"},
	}
	for name, flags := range cases {
		args := []string{"hash", "--block-size", "4"}
		if !strings.Contains(strings.Join(flags, " "), "--meta") {
			args = append(args, "--meta", "meta-llama/Llama-3.1-8B:1:torch.bfloat16:0")
		}
		code, out, errs := runMain(t, append(append(args, flags...), tokens1to10...)...)
		if code != exitUsage || out != "" || errs == "" {
			t.Errorf("%s: status %d, stdout %q, stderr %q; want 2, nothing, a message", name, code, out, errs)
		}
	}
}
