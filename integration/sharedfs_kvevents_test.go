package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// sharedMedium is the medium of the shared tier of threeHosts' daemons:
// their second directory tier, of kind nfs (docs/control.md, KV events).
// llm-d's indexer takes a medium as the device tier it records, lowered
// ("disk_tier_ucmfs_nfs"), whatever its name; Dynamo's router keeps it
// as a string too.
const sharedMedium = "DISK_TIER_ucmfs_nfs"

// TestSharedFSKVEvents: with --kv-events on each of three hosts (an ipc
// endpoint each, and its replay socket), a block host A publishes is
// announced by hosts B and C, which never read it, as stored on the
// shared tier (sharedMedium), once: each further listing of its shard
// directory (proved by a block published after it in the same shard,
// which each host announces in turn) does not announce it again. Its
// removal on A is announced by B and C once, as removed from the shared
// tier. The subscriber is the one written from vLLM's example
// (testdata/kv_subscriber.py), replaying what it joined too late for.
func TestSharedFSKVEvents(t *testing.T) {
	py := zmqPython(t)
	for _, name := range sharedFSNames {
		t.Run(name, func(t *testing.T) {
			fs := needSharedFS(t, name)
			hs := hostsOn(t, fs, hostsConfig{events: true})
			a := hs[0]
			const model = "kv"
			// kvIDs share their first hex digits: one shard directory.
			ids := kvIDs("7", 8)
			block, markers, sentinel := ids[0], ids[1:7], ids[7]
			var subs []*subscriber
			for _, d := range hs[1:] {
				pub, replay := hostEvents(d.Mnt)
				subs = append(subs, subscribe(t, py, pub, replay, idHash(sentinel)))
			}
			// seenOn waits until host h's subscriber was told typ of id.
			seenOn := func(h int, typ, id string) {
				t.Helper()
				took := until(t, fmt.Sprintf("%s of %s on host %c", typ, id[len(id)-8:], 'B'+h), func() bool {
					tuples, _ := subs[h].seen(t)
					return count(tuples, kvTuple{Type: typ, Hash: idHash(id), Medium: sharedMedium}) > 0
				})
				t.Logf("%s: host %c announced %s of %s on the share %v after", name, 'B'+h, typ, id[len(id)-8:], took)
			}
			// announced publishes id on A and waits until B and C announce it.
			announced := func(id string) {
				t.Helper()
				writeBlocks(t, a, model, []string{id})
				flushAll(t, a)
				for h := range subs {
					seenOn(h, "BlockStored", id)
				}
			}

			announced(block)
			for _, m := range markers[:3] { // three more listings of the shard on each host
				announced(m)
			}
			if err := os.Remove(blockPath(a.Mnt, model, block)); err != nil {
				t.Fatal(err)
			}
			for h := range subs {
				seenOn(h, "BlockRemoved", block)
			}
			for _, m := range markers[3:] {
				announced(m)
			}
			announced(sentinel)
			for h, s := range subs {
				tuples, gaps := s.wait(t)
				var mine []string
				for _, tp := range tuples {
					if tp.Hash == idHash(block) {
						mine = append(mine, tp.Type+"@"+tp.Medium)
					}
				}
				t.Logf("%s: host %c: %d tuples (%d gaps replayed); those of A's block: %v", name, 'B'+h, len(tuples), gaps, mine)
				want := []string{"BlockStored@" + sharedMedium, "BlockRemoved@" + sharedMedium}
				if strings.Join(mine, " ") != strings.Join(want, " ") {
					t.Errorf("host %c announced A's block as %v, want %v (once each, on the share only)", 'B'+h, mine, want)
				}
				for _, m := range markers {
					if n := count(tuples, kvTuple{Type: "BlockStored", Hash: idHash(m), Medium: sharedMedium}); n != 1 {
						t.Errorf("host %c announced marker %s stored %d times", 'B'+h, m[len(m)-8:], n)
					}
				}
			}
		})
	}
}

// count is how many of tuples are tp.
func count(tuples []kvTuple, tp kvTuple) int {
	n := 0
	for _, x := range tuples {
		if x == tp {
			n++
		}
	}
	return n
}
