package integration

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"
)

// The shared filesystem's own faults under three running daemons: a
// storage daemon (Ceph's OSD, a Gluster brick) or Ceph's MDS stopped and
// started again, and one host's client process killed (its mount then
// answers ENOTCONN) and mounted again.

// faultTimeout is the shared tier's operation timeout in these tests
// (the config file's timeout; 60 s by default for nfs).
const faultTimeout = 3 * time.Second

// hangBound is how long an engine's call through a mount may take while
// its shared tier stalls: the timeout, one more for an operation that
// began just before the tier went down, and slack for a loaded machine.
// Past it the call hangs.
const hangBound = 2*faultTimeout + 5*time.Second

// sharedFault is one fault of a filesystem.
type sharedFault struct {
	name string
	// host is the host whose shared tier the fault reaches (the others
	// see it too, except for a client's).
	host int
	// inject starts the fault; heal ends it and returns once the
	// filesystem serves again.
	inject, heal func(t *testing.T, fs *sharedFS, hs hosts)
}

// script runs the filesystem's script command cmd with args.
func script(cmd string, args ...string) func(t *testing.T, fs *sharedFS, hs hosts) {
	return func(t *testing.T, fs *sharedFS, _ hosts) { fs.mustRun(t, append([]string{cmd, fs.dir}, args...)...) }
}

// clientKill kills host B's client process: its mount answers ENOTCONN.
func clientKill(t *testing.T, fs *sharedFS, _ hosts) {
	fs.mustRun(t, "client-kill", fs.dir, fs.mnts[1])
}

// clientRemount unmounts host B's dead client mount and mounts it again.
func clientRemount(t *testing.T, fs *sharedFS, _ hosts) {
	fs.mustRun(t, "umount", fs.dir, fs.mnts[1])
	fs.mustRun(t, "mount", fs.dir, fs.mnts[1])
}

// sharedFaults are the faults each filesystem is put through, in order.
var sharedFaults = map[string][]sharedFault{
	"cephfs": {
		{name: "osd", host: 1, inject: script("osd-stop", "0"), heal: script("osd-start", "0")},
		{name: "mds", host: 1, inject: script("mds-stop"), heal: script("mds-start")},
		{name: "client", host: 1, inject: clientKill, heal: clientRemount},
	},
	"glusterfs": {
		{name: "brick", host: 1, inject: script("brick-stop", "0"), heal: script("brick-start")},
		{name: "client", host: 1, inject: clientKill, heal: clientRemount},
	},
}

// timed runs fn and fails t when it takes longer than hangBound: a call
// that hangs an engine. It returns how long fn took.
func timed(t *testing.T, what string, fn func() error) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		took := time.Since(start)
		t.Logf("%s during the fault: %v after %v", what, err, took.Round(time.Millisecond))
		return took
	case <-time.After(hangBound):
		t.Errorf("%s during the fault: no answer after %v (the tier's timeout is %v)", what, hangBound, faultTimeout)
		<-done
		return time.Since(start)
	}
}

// TestSharedFSFaults: each fault of each filesystem under three daemons
// (nvme in front of the share, the share's timeout 3 s). During the
// fault, a read of a block the host never read, a publish and a flush on
// the host it reaches, and a lookup of a missing block each return within
// the timeout (an error or the exact bytes); its shared tier goes down.
// After it, the tier is up again on every host, every block acknowledged
// (flushed) before the fault reads exact on every host, and the block
// published during the fault reaches the other hosts once flushed.
func TestSharedFSFaults(t *testing.T) {
	for _, name := range sharedFSNames {
		t.Run(name, func(t *testing.T) {
			fs := needSharedFS(t, name)
			hs := hostsOn(t, fs, hostsConfig{timeout: faultTimeout})
			for _, f := range sharedFaults[name] {
				t.Run(f.name, func(t *testing.T) { runSharedFault(t, fs, hs, f) })
			}
		})
	}
}

// runSharedFault puts hosts hs through fault f.
func runSharedFault(t *testing.T, fs *sharedFS, hs hosts, f sharedFault) {
	model := "fault-" + f.name
	const n = 8
	ids := testIDs(model, n+2)
	if err := os.Mkdir(hs[0].path(model), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids[:n] {
		if err := writeVerdict(blockPath(hs[0].Mnt, model, id), goodBlock(id)); err != nil {
			t.Fatal(err)
		}
	}
	flushAll(t, hs[0]) // acknowledged: on the share
	h := hs[f.host]
	waitUntil(t, "the model on the faulted host", func() bool { _, err := os.Stat(h.path(model)); return err == nil })

	f.inject(t, fs, hs)
	healed := false
	defer func() {
		if !healed {
			f.heal(t, fs, hs)
		}
	}()
	for _, id := range ids[:n] {
		timed(t, "a cold read of "+id[:8], func() error {
			got, err := os.ReadFile(blockPath(h.Mnt, model, id))
			if err == nil && !bytes.Equal(got, goodBlock(id)) {
				t.Errorf("%s read %d bytes, not the block written", id, len(got))
			}
			return err
		})
	}
	during := ids[n]
	timed(t, "a publish", func() error { return writeVerdict(blockPath(h.Mnt, model, during), goodBlock(during)) })
	timed(t, "a flush", func() error { return flushErr(h) })
	timed(t, "a lookup of a missing block", func() error { _, err := os.Stat(blockPath(h.Mnt, model, ids[n+1])); return err })
	until(t, "the shared tier down on the faulted host", func() bool { return tierHealth(t, h, "nfs") == "down" })

	f.heal(t, fs, hs)
	healed = true
	for i, d := range hs {
		took := until(t, fmt.Sprintf("the shared tier up on host %c", 'A'+i), func() bool { return tierHealth(t, d, "nfs") == "up" })
		t.Logf("%s: the shared tier up on host %c %v after the heal", f.name, 'A'+i, took.Round(time.Millisecond))
	}
	for i, d := range hs {
		var last error
		took := until(t, fmt.Sprintf("the blocks acknowledged before the fault on host %c", 'A'+i), func() bool {
			for _, id := range ids[:n] {
				if got, err := os.ReadFile(blockPath(d.Mnt, model, id)); err != nil || !bytes.Equal(got, goodBlock(id)) {
					if last == nil || err != nil && err.Error() != last.Error() {
						t.Logf("%s: host %c does not read %s yet: %v (%d bytes)", f.name, 'A'+i, id[:8], err, len(got))
						last = fmt.Errorf("%v", err)
					}
					return false
				}
			}
			return true
		})
		t.Logf("%s: the blocks acknowledged before the fault read exact on host %c %v after the heal", f.name, 'A'+i, took.Round(time.Millisecond))
	}
	// The flush after the heal may meet the tier stalled again while it
	// pays what it owes (the first writes through a client mount that
	// came back can fail, and each failure holds the tier down for a
	// probe's period): what is asserted is that it succeeds soon, and
	// that the block published during the fault then reaches every host.
	var flushed error
	took := until(t, "a flush on the faulted host after the heal", func() bool {
		err := flushErr(h)
		if err != nil && (flushed == nil || err.Error() != flushed.Error()) {
			t.Logf("%s: flush after the heal: %v", f.name, err)
		}
		flushed = err
		return err == nil
	})
	t.Logf("%s: a flush on the faulted host succeeded %v after the blocks read exact", f.name, took.Round(time.Millisecond))
	for i, d := range hs {
		took := until(t, fmt.Sprintf("the block published during the fault on host %c", 'A'+i), func() bool {
			return readsAs(blockPath(d.Mnt, model, during), goodBlock(during))
		})
		t.Logf("%s: the block published during the fault read on host %c %v after the flush", f.name, 'A'+i, took.Round(time.Millisecond))
	}
}
