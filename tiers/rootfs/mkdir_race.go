package rootfs

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// A mkdir on a shared filesystem races with the same mkdir on other
// hosts, and on GlusterFS the loser can be told EEXIST for a directory
// that a stat on its own client does not find yet (ENOENT): DHT has the
// name on the subvolume it hashes to while the winner's mkdir is still
// under way on the others, and a lookup fails until it ends (seen as
// "mkdir: stat …: no such file or directory" when two hosts published
// into the same new shard directory at once). So an EEXIST that a stat
// then denies is taken for that race, not for an error: mkdir and stat
// again, with a growing pause, up to mkdirRaceTries times (about two
// seconds in all), and only then is the ENOENT returned.

// mkdirRaceTries bounds the mkdir-and-stat rounds of FoundDir.
const mkdirRaceTries = 10

// mkdirRacePause is the first pause between two rounds; each doubles it,
// up to mkdirRacePauseMax.
const (
	mkdirRacePause    = 5 * time.Millisecond
	mkdirRacePauseMax = 500 * time.Millisecond
)

// FoundDir is what follows a mkdir of rel in fs that failed EEXIST: it
// returns the file type (st_mode & S_IFMT) of what is at rel, S_IFDIR
// when it made the directory itself after all. A stat that finds nothing
// is the race above: it makes the directory again (perm), a bounded
// number of times, before it returns the stat's error. The caller judges
// the type (a link or a file where a directory goes is its error).
func FoundDir(fs FS, rel string, perm uint32) (uint32, error) {
	pause := mkdirRacePause
	for try := 1; ; try++ {
		var st unix.Stat_t
		err := fs.Lstat(rel, &st)
		if err == nil {
			return st.Mode & unix.S_IFMT, nil
		}
		if !errors.Is(err, unix.ENOENT) || try == mkdirRaceTries {
			return 0, err
		}
		time.Sleep(pause)
		pause = min(2*pause, mkdirRacePauseMax)
		if err := fs.Mkdir(rel, perm); err == nil {
			return unix.S_IFDIR, nil
		} else if !errors.Is(err, unix.EEXIST) {
			return 0, err
		}
	}
}
