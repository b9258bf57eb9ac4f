package dir

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ucmfs/ucmfs/tiers/tier"
)

// Temp files of a directory tier are named
// .tmp-<host>@<pid>-<id>-<random>: the host and process that write them.
// In a shared directory that lets any daemon tell what a crash left:
//
//   - a temp file of this host whose process is gone is removed at once;
//   - any temp file older than staleTempAge (its writer, on whatever
//     host, would have written to it since, or timed out) is removed.
//
// Both happen at every listing of a shard (the background scan at start,
// and each revalidation that lists the shard again), so leftovers of a
// crashed host go within staleTempAge of its crash while other hosts run.

// tempTag is this process's part of its temp names: "<host>@<pid>".
var tempTag = func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_':
			return r
		}
		return '_'
	}, host)
	return host + "@" + strconv.Itoa(os.Getpid())
}()

// TempName is the base name of a new temp file for the block id (hex).
func TempName(id string) string {
	return tier.TmpPrefix + tempTag + "-" + id + "-" + tier.RandomSuffix()
}

// IsTempName reports whether name is a temp file a tier writes a file to
// before it publishes it (tempName's form: ".tmp-<host>@<pid>-<id>-<16
// hex>"). In a files model's tree only those are the tiers' leftovers: an
// engine may name its own files ".tmp-<anything>", and they are Files.
func IsTempName(name string) bool {
	if _, _, ok := tempOwner(name); !ok {
		return false
	}
	i := strings.LastIndexByte(name, '-')
	if len(name)-i-1 != 16 {
		return false
	}
	for _, c := range name[i+1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// tempOwner parses the host and pid out of a temp name; ok is false for
// a name of another form (an older daemon's, or not a temp file).
func tempOwner(name string) (host string, pid int, ok bool) {
	rest, found := strings.CutPrefix(name, tier.TmpPrefix)
	if !found {
		return "", 0, false
	}
	host, rest, found = strings.Cut(rest, "@")
	if !found {
		return "", 0, false
	}
	p, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(p)
	return host, pid, err == nil && pid > 0
}

// staleTemp reports whether a temp file of a shared directory, last
// written at mtime, is a crash's leftover that may be removed.
func staleTemp(name string, mtime time.Time) bool {
	if !strings.HasPrefix(name, tier.TmpPrefix) {
		return false
	}
	if time.Since(mtime) >= staleTempAge {
		return true
	}
	host, pid, ok := tempOwner(name)
	if !ok {
		return false
	}
	myHost, _, _ := strings.Cut(tempTag, "@")
	if host != myHost || pid == os.Getpid() {
		return false
	}
	return unix.Kill(pid, 0) == unix.ESRCH // that process is gone
}

// removeForeignTemps removes the stale temp files (staleTemp) among the
// entries of the shard directory dir (beneath the root).
func (t *Tier) removeForeignTemps(dir string, ents []shardEntry) (removed int) {
	for _, e := range ents {
		if e.class != leftoverEntry || !staleTemp(e.name, time.Unix(e.mtime.Unix())) {
			continue
		}
		p := dir + "/" + e.name
		if t.do("remove", func() error { return t.fs.Unlink(p) }, nil) == nil {
			removed++
		}
	}
	if removed > 0 {
		t.log.Info("removed leftover temp files", "kind", t.kind, "dir", dir, "files", removed)
	}
	return removed
}
