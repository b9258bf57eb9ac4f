package integration

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// kvTuple is one block of one KV event, as a router applies it: the
// event's type, the block's hash, the medium.
type kvTuple struct {
	Type   string
	Hash   uint64
	Medium string
}

// kvState is what a router believes a node holds: the mediums of each hash.
type kvState map[uint64]map[string]bool

// apply applies one tuple.
func (s kvState) apply(tp kvTuple) {
	switch tp.Type {
	case "AllBlocksCleared":
		clear(s)
	case "BlockStored":
		if s[tp.Hash] == nil {
			s[tp.Hash] = map[string]bool{}
		}
		s[tp.Hash][tp.Medium] = true
	case "BlockRemoved":
		delete(s[tp.Hash], tp.Medium)
		if len(s[tp.Hash]) == 0 {
			delete(s, tp.Hash)
		}
	}
}

// minus lists what s holds and o does not, sorted (first 20).
func (s kvState) minus(o kvState) string {
	var out []string
	for h, ms := range s {
		for m := range ms {
			if !o[h][m] {
				out = append(out, fmt.Sprintf("%016x@%s", h, m))
			}
		}
	}
	slices.Sort(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("... (%d in all)", len(out)))
	}
	return strings.Join(out, " ")
}

// journalLine is a line of .ucm/events.
type journalLine struct {
	Seq    uint64 `json:"seq"`
	Type   string `json:"type"`
	Model  string `json:"model"`
	Path   string `json:"path"`
	ID     string `json:"id"`
	Hash   string `json:"hash"`
	Medium string `json:"medium"`
	Tier   string `json:"tier"`
	Next   uint64 `json:"next"`
	Count  uint64 `json:"count"`
}

// tuple is the line as a router's tuple; ok is false for a line a router
// is not sent (no hash known, lost, idle).
func (l journalLine) tuple() (kvTuple, bool) {
	switch l.Type {
	case "cleared":
		return kvTuple{Type: "AllBlocksCleared"}, true
	case "stored", "removed":
		if l.Hash == "" {
			return kvTuple{}, false
		}
		h, err := strconv.ParseUint(l.Hash, 16, 64)
		if err != nil {
			return kvTuple{}, false
		}
		typ := "BlockStored"
		if l.Type == "removed" {
			typ = "BlockRemoved"
		}
		return kvTuple{Type: typ, Hash: h, Medium: l.Medium}, true
	}
	return kvTuple{}, false
}

// readJournal reads .ucm/events from its oldest event to the first idle
// line: every line before it, and the next sequence number it names.
func readJournal(t *testing.T, mnt string) ([]journalLine, uint64) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(mnt, ".ucm", "events"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("from oldest\n"); err != nil {
		t.Fatal(err)
	}
	var out []journalLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var l journalLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf(".ucm/events: %q: %v", sc.Text(), err)
		}
		switch l.Type {
		case "idle":
			return out, l.Next
		case "lost":
			t.Fatalf(".ucm/events lost %d events from the oldest on", l.Count)
		}
		out = append(out, l)
	}
	t.Fatalf(".ucm/events ended without an idle line: %v", sc.Err())
	return nil, 0
}

// kvPorts are the ports a daemon's KV-event PUB and replay sockets
// listen on, as it announced them (--kv-events on port 0: the kernel's).
func kvPorts(t *testing.T, d *daemon) (pub, replay int) {
	t.Helper()
	m := regexp.MustCompile(`KV events on .* \(listening on [^\s]*:(\d+)\), replay on .* \(listening on [^\s]*:(\d+)\)`).FindStringSubmatch(d.out.String())
	if m == nil {
		t.Fatalf("no KV-event ports announced:\n%s", d.out.String())
	}
	pub, _ = strconv.Atoi(m[1])
	replay, _ = strconv.Atoi(m[2])
	return pub, replay
}

// zmqPython is a python3 that imports zmq and msgpack (Debian's
// python3-zmq and python3-msgpack, which .ci/run installs).
func zmqPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import zmq, msgpack").Run() == nil {
			return py
		}
	}
	if os.Getenv("UCMFS_REQUIRE_FUSE") == "1" {
		t.Fatal("no python3 with zmq and msgpack (Debian: python3-zmq python3-msgpack)")
	}
	t.Skip("no python3 with zmq and msgpack (Debian: python3-zmq python3-msgpack)")
	return ""
}

// subscriber is testdata/kv_subscriber.py running.
type subscriber struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

// startSubscriber starts a subscriber of d's publisher on its tcp ports,
// which exits once it sees sentinel stored.
func startSubscriber(t *testing.T, py string, d *daemon, sentinel uint64) *subscriber {
	t.Helper()
	port, replay := kvPorts(t, d)
	return subscribe(t, py, fmt.Sprintf("tcp://127.0.0.1:%d", port), fmt.Sprintf("tcp://127.0.0.1:%d", replay), sentinel)
}

// subscribe starts a subscriber of the publisher at pub (replays from
// replay), which exits once it sees sentinel stored.
func subscribe(t *testing.T, py, pub, replay string, sentinel uint64) *subscriber {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "kv_subscriber.py"))
	if err != nil {
		t.Fatal(err)
	}
	s := &subscriber{out: &syncBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(py, script, pub, replay, strconv.FormatUint(sentinel, 10), "120")
	s.cmd.Stdout = s.out
	var stderr syncBuffer
	s.cmd.Stderr = &stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := s.cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr.String())
		}
		s.done <- err
	}()
	t.Cleanup(func() { s.cmd.Process.Kill() })
	return s
}

// wait waits for the subscriber to exit (it saw its sentinel, or timed
// out) and returns its tuples in order and the gaps it replayed.
func (s *subscriber) wait(t *testing.T) (tuples []kvTuple, gaps int) {
	t.Helper()
	if err := <-s.done; err != nil {
		t.Fatalf("subscriber: %v\n%s", err, s.out.String())
	}
	return s.seen(t)
}

// seen returns the tuples the subscriber printed so far, in order, and
// the gaps it replayed.
func (s *subscriber) seen(t *testing.T) (tuples []kvTuple, gaps int) {
	t.Helper()
	out := s.out.String()
	out = out[:strings.LastIndexByte(out, '\n')+1] // whole lines only
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		if ln == "" {
			continue
		}
		var ev struct {
			Type   string   `json:"type"`
			Hashes []uint64 `json:"hashes"`
			Medium string   `json:"medium"`
		}
		if err := json.Unmarshal([]byte(ln), &ev); err != nil {
			t.Fatalf("subscriber line %q: %v", ln, err)
		}
		switch ev.Type {
		case "gap":
			gaps++
		case "AllBlocksCleared":
			tuples = append(tuples, kvTuple{Type: ev.Type})
		default:
			for _, h := range ev.Hashes {
				tuples = append(tuples, kvTuple{Type: ev.Type, Hash: h, Medium: ev.Medium})
			}
		}
	}
	return tuples, gaps
}

// tierMediums names the medium of each tier kind of the test mounts
// (one nvme tier).
var tierMediums = map[string]string{"mem": "CPU_TIER_ucmfs", "nvme": "DISK_TIER_ucmfs"}

// indexState reads user.ucm.tiers of each file and returns what a router
// should believe: hashes maps each file's path to its block hash.
func indexState(t *testing.T, hashes map[string]uint64) kvState {
	t.Helper()
	st := kvState{}
	buf := make([]byte, 256)
	for path, h := range hashes {
		n, err := unix.Getxattr(path, "user.ucm.tiers", buf)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			t.Fatalf("getxattr %s: %v", path, err)
		}
		for _, tier := range strings.Split(string(buf[:n]), ",") {
			if tier == "" {
				continue
			}
			st.apply(kvTuple{Type: "BlockStored", Hash: h, Medium: tierMediums[tier]})
		}
	}
	return st
}

// idHash is the hash a router knows block id by: its last 8 bytes.
func idHash(id string) uint64 {
	b, _ := hex.DecodeString(id)
	return binary.BigEndian.Uint64(b[len(b)-8:])
}
