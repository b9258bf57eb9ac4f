package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// kill9Cycles is how many times TestKill9Loop kills the daemon.
const kill9Cycles = 20

// TestKill9Loop kills the daemon with SIGKILL 20 times while writers
// publish blocks, some fsynced, some not. After each restart every block
// whose fsync and close succeeded, in any cycle so far, reads back intact
// (0 lost), and every block present is whole (0 torn); at the end the
// tier passes fsck.
func TestKill9Loop(t *testing.T) {
	tier := testDir(t) + "/tier"
	var mnt string
	durable := map[string]bool{}
	seq := 0
	lost, torn, present := 0, 0, 0
	for cycle := 0; cycle < kill9Cycles; cycle++ {
		d := mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
		mnt = d.Mnt
		if cycle == 0 {
			os.Mkdir(d.path("m"), 0o755)
		}
		// Everything durable so far is there and intact; nothing torn.
		for id := range durable {
			got, err := os.ReadFile(blockPath(d.Mnt, "m", id))
			if err != nil || !bytes.Equal(got, bigBlock(id, 64<<10)) {
				lost++
				t.Errorf("cycle %d: fsynced block %s: %v", cycle, id, err)
			}
		}
		ids := listBlocks(t, d.Mnt, "m")
		present = len(ids)
		for _, id := range ids {
			if got, err := os.ReadFile(blockPath(d.Mnt, "m", id)); err == nil && !bytes.Equal(got, bigBlock(id, 64<<10)) {
				torn++
				t.Errorf("cycle %d: block %s is torn (%d bytes)", cycle, id, len(got))
			}
		}

		// Load: four writers, two fsyncing, until the kill.
		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := make(chan struct{})
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					mu.Lock()
					seq++
					id := testIDs(fmt.Sprintf("kill9loop-%d", seq), 1)[0]
					mu.Unlock()
					os.Mkdir(d.path("m", id[:2]), 0o755)
					var err error
					if w%2 == 0 {
						err = fsyncVerdict(blockPath(d.Mnt, "m", id), bigBlock(id, 64<<10))
					} else {
						err = writeVerdict(blockPath(d.Mnt, "m", id), bigBlock(id, 64<<10))
					}
					if err == nil && w%2 == 0 {
						mu.Lock()
						durable[id] = true
						mu.Unlock()
					}
					if err != nil && !d.alive() {
						return
					}
				}
			}(w)
		}
		time.Sleep(time.Duration(150+cycle*17%200) * time.Millisecond)
		d.kill()
		close(stop)
		wg.Wait()
		if err := waitDetach(d); err != nil {
			t.Fatal(err)
		}
	}
	d := mountUCM(t, mountOpts{Mnt: mnt, Tier: tier})
	for id := range durable {
		if got, err := os.ReadFile(blockPath(d.Mnt, "m", id)); err != nil || !bytes.Equal(got, bigBlock(id, 64<<10)) {
			lost++
			t.Errorf("at the end: fsynced block %s: %v", id, err)
		}
	}
	if code := d.stop(); code != 0 {
		t.Errorf("exit %d", code)
	}
	if out, err := exec.Command(ucmfsBin, "fsck", tier).CombinedOutput(); err != nil {
		t.Errorf("fsck after %d kills: %v\n%s", kill9Cycles, err, out)
	}
	t.Logf("%d kill -9 cycles: %d fsynced blocks, %d present at the last start, %d lost, %d torn", kill9Cycles, len(durable), present, lost, torn)
}

// waitDetach detaches a killed daemon's dead mount.
func waitDetach(d *daemon) error {
	for i := 0; ; i++ {
		if !isMounted(d.Mnt) {
			return nil
		}
		d.detach()
		if i > 100 {
			return errors.New("the dead mount stays")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
