package fs

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strconv"
	"sync"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/ucmfs/ucmfs/tiers"
	"golang.org/x/sys/unix"
)

// Files being written (docs/spec.md §6, docs/semantics.md "Writing").
//
// A file being written is an inProgress: one private file of the memory
// tier (a tiers.PendingWrite) that any number of descriptors may write at
// any offset. It is one of two kinds:
//
//   - a final name (<id>.bin, <id>.repr) that a process created: no lookup
//     finds it (nobody reads a block before it is published), but another
//     create of the name by the same process (its thread group) joins it,
//     so the threads of one writer share the file while two engines that
//     write one id never do. It publishes when the process is
//     done with it: when every open descriptor of it has been closed by
//     that process (FLUSH from its thread group), or at fsync. A FLUSH
//     from another process (a child closing an inherited or close-on-exec
//     descriptor at exec or exit) neither publishes nor rejects.
//   - a staging name (<final>.tmp, rsync's .<final>.XXXXXX): visible to
//     the processes of the user that made it, listed to them only, kept
//     after close, and published by rename(staging, final). If
//     descriptors are still open at the rename it publishes when the
//     creating process has closed them all, as a final name does.
//
// progressTable finds them by name for lookup, create, readdir, rename
// and unlink; an entry leaves it when it is published, renamed, unlinked
// or discarded.

// progressKey names an in-progress file in the table: its shard directory
// and name, and who sees it (the creating thread group for a final name,
// the creating user for a staging name).
type progressKey struct {
	model   string
	shard   string // the shard directory's name
	name    string
	staging bool
	who     uint32 // tgid, or uid for a staging name
}

// progressTable holds the in-progress files that lookups can reach. Its
// mutex is a leaf. names counts the entries of each name, whoever sees
// them, so a lookup of a name nobody writes costs no look at the caller.
type progressTable struct {
	mu       sync.Mutex
	m        map[progressKey]*inProgress
	names    map[progressName]int
	stagings int // staging entries
}

// progressName is a name in a shard directory.
type progressName struct {
	model string
	shard string
	name  string
}

// has reports whether anyone writes name in model's shard.
func (t *progressTable) has(model, shard, name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.names[progressName{model, shard, name}] > 0
}

// anyStaging reports whether there is a staging file anywhere.
func (t *progressTable) anyStaging() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stagings > 0
}

func (t *progressTable) get(k progressKey) *inProgress {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[k]
}

// put adds ip under k unless k is taken; it returns the entry under k.
func (t *progressTable) put(k progressKey, ip *inProgress) *inProgress {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[progressKey]*inProgress)
		t.names = make(map[progressName]int)
	}
	if old := t.m[k]; old != nil {
		return old
	}
	t.m[k] = ip
	t.names[progressName{k.model, k.shard, k.name}]++
	if k.staging {
		t.stagings++
	}
	return ip
}

// drop removes k if it still holds ip.
func (t *progressTable) drop(k progressKey, ip *inProgress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[k] != ip {
		return
	}
	delete(t.m, k)
	n := progressName{k.model, k.shard, k.name}
	if t.names[n]--; t.names[n] <= 0 {
		delete(t.names, n)
	}
	if k.staging {
		t.stagings--
	}
}

// staging returns the staging files of model's shard that uid sees.
func (t *progressTable) staging(model, shard string, uid uint32) []*inProgress {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*inProgress
	for k, ip := range t.m {
		if k.staging && k.model == model && k.shard == shard && k.who == uid {
			out = append(out, ip)
		}
	}
	return out
}

// proc is the process a request comes from.
type proc struct {
	tgid, uid, gid uint32
}

// callerProc returns the process of the request ctx carries; a request
// from inside the daemon (no caller) is the daemon's.
func callerProc(ctx context.Context) proc {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return proc{tgid: uint32(os.Getpid()), uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}
	}
	return proc{tgid: tgidOf(c.Pid), uid: c.Uid, gid: c.Gid}
}

// tgidCache remembers the thread group of the threads seen (every request
// asks for it: reading /proc/<tid>/status each time cost ~20 µs). An entry
// is checked before use by the existence of /proc/<tgid>/task/<tid>: a
// thread id reused by another process fails it. The map is emptied when
// it grows past tgidCacheMax.
var tgidCache struct {
	sync.Mutex
	m map[uint32]uint32
}

const tgidCacheMax = 1 << 16

// tgidOf returns the thread group (process) of thread tid; 0 when it
// cannot be found (the thread is gone).
func tgidOf(tid uint32) uint32 {
	if tid == 0 {
		return 0
	}
	tgidCache.Lock()
	tg, ok := tgidCache.m[tid]
	tgidCache.Unlock()
	if ok && unix.Access("/proc/"+strconv.FormatUint(uint64(tg), 10)+"/task/"+strconv.FormatUint(uint64(tid), 10), unix.F_OK) == nil {
		return tg
	}
	tg = readTgid(tid)
	if tg != 0 {
		tgidCache.Lock()
		if tgidCache.m == nil || len(tgidCache.m) >= tgidCacheMax {
			tgidCache.m = make(map[uint32]uint32)
		}
		tgidCache.m[tid] = tg
		tgidCache.Unlock()
	}
	return tg
}

// readTgid reads the thread group of thread tid from /proc/<tid>/status.
func readTgid(tid uint32) uint32 {
	b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(tid), 10) + "/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("Tgid:")); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 10, 32)
			if err != nil {
				return 0
			}
			return uint32(n)
		}
	}
	return 0
}

// progressKeyOf is the table key of name in key's shard as p sees it.
func progressKeyOf(key tiers.Key, name string, staging bool, p proc) progressKey {
	who := p.tgid
	if staging {
		who = p.uid
	}
	return progressKey{model: key.Model, shard: key.ShardDir(), name: name, staging: staging, who: who}
}
