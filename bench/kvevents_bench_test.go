package bench

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
)

// kvBlock is the block size of BenchmarkMountWriteKVEvents: small, so the
// writes make as many events per second as a write load does.
const kvBlock = 64 << 10

// kvSubscriber drains a publisher's stream as a router would (pyzmq,
// Debian's python3-zmq), counting batches; it runs until killed.
const kvSubscriber = `
import sys, zmq
s = zmq.Context().socket(zmq.SUB)
s.connect(sys.argv[1]); s.setsockopt_string(zmq.SUBSCRIBE, "")
while True: s.recv_multipart()
`

// kvTargets are the two daemons of BenchmarkMountWriteKVEvents, alike but
// for --kv-events (and a subscriber draining it), made once per process.
var kvTargets struct {
	sync.Mutex
	ts  []*target
	err error
	sub *exec.Cmd
}

// makeKVTargets starts "publisher-off" and "publisher-on".
func makeKVTargets(tb testing.TB) []*target {
	tb.Helper()
	requireFUSE(tb)
	kvTargets.Lock()
	defer kvTargets.Unlock()
	if kvTargets.ts != nil || kvTargets.err != nil {
		if kvTargets.err != nil {
			tb.Fatal(kvTargets.err)
		}
		return kvTargets.ts
	}
	for _, c := range []struct {
		name  string
		extra []string
	}{
		{"publisher-off", nil},
		{"publisher-on", []string{"--kv-events", "tcp://*:0", "--kv-events-replay", "none", "--kv-events-models", "*"}},
	} {
		mnt, tier := filepath.Join(diskDir, c.name+"-mnt"), filepath.Join(diskDir, c.name+"-tier")
		if kvTargets.err = makeDirs(mnt); kvTargets.err != nil {
			tb.Fatal(kvTargets.err)
		}
		d := newDaemon(mnt, tier, sharedMemory, append([]string{"--fuse-transport", "dev"}, c.extra...)...)
		if _, kvTargets.err = d.start(); kvTargets.err != nil {
			tb.Fatal(kvTargets.err)
		}
		kvTargets.ts = append(kvTargets.ts, &target{name: c.name, root: mnt, d: d})
	}
	// The port the kernel gave the publisher, as the daemon announced it.
	m := regexp.MustCompile(`KV events on .* \(listening on [^\s]*:(\d+)\)`).FindStringSubmatch(kvTargets.ts[1].d.output())
	if m == nil {
		tb.Fatalf("the publisher announced no address:\n%s", kvTargets.ts[1].d.output())
	}
	sub := exec.Command("/usr/bin/python3", "-c", kvSubscriber, "tcp://127.0.0.1:"+m[1])
	if err := sub.Start(); err != nil {
		tb.Logf("no subscriber (python3-zmq): %v; the publisher sends to nobody", err)
	} else {
		kvTargets.sub = sub
	}
	return kvTargets.ts
}

// kvBurst is how many blocks one iteration of BenchmarkMountWriteKVEvents
// writes: 16 MiB, far below the dirty background threshold, so the
// writes are timed without the disk (write-back) and the publish path's
// cost, where the events are made, is what the figure shows.
const kvBurst = 256

// BenchmarkMountWriteKVEvents times bursts of new 64 KiB blocks (open,
// write, close: a publish and one stored event each) on two daemons alike
// but for --kv-events with a subscriber draining it, the rounds
// interleaved: what the KV-event publisher costs a writer. After each
// burst's timing its blocks are removed (one removed event each).
func BenchmarkMountWriteKVEvents(b *testing.B) {
	ts := makeKVTargets(b)
	for r := 0; r < rounds(); r++ {
		for _, t := range ts {
			b.Run(t.name, func(b *testing.B) {
				model := modelFor(b)
				t.prepare(b, model)
				blk := newBlock(kvBlock)
				written := make([]string, 0, kvBurst)
				b.SetBytes(kvBurst * kvBlock)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					for range kvBurst {
						written = writeNew(b, t, model, blk, written)
					}
					b.StopTimer()
					written = t.dropBatch(b, written)
					b.StartTimer()
				}
			})
		}
	}
}

// stopKVSubscriber ends the subscriber, if one runs (TestMain).
func stopKVSubscriber() {
	kvTargets.Lock()
	defer kvTargets.Unlock()
	if kvTargets.sub != nil {
		kvTargets.sub.Process.Kill()
		kvTargets.sub.Wait()
		kvTargets.sub = nil
	}
}
