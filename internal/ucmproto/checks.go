package ucmproto

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// The store's checks around its data path: the startup I/O check of a
// backend and the GC lease of newer PosixStores.

// HealthCheck is the store's startup I/O check on a backend: a random
// block's in-progress file opened O_CREAT|O_RDWR (and O_DIRECT outside
// psync), 4096 bytes written at 0, fsync'ed (buffered only), read back,
// compared, closed and removed.
func (s *Store) HealthCheck(id string) error {
	p := s.Path(id, true)
	fl := unix.O_CREAT | unix.O_RDWR | unix.O_CLOEXEC
	if s.Mode != Psync {
		fl |= unix.O_DIRECT
	}
	fd, err := unix.Open(p, fl, 0o644)
	if err != nil {
		return fmt.Errorf("health: open: %w", err)
	}
	want, got := alignedBuf(4096), alignedBuf(4096)
	defer unix.Munmap(want)
	defer unix.Munmap(got)
	for i := range want {
		want[i] = 0x5a
	}
	_, err = unix.Pwrite(fd, want, 0)
	if err == nil && s.Mode == Psync {
		err = unix.Fsync(fd)
	}
	if err == nil {
		_, err = unix.Pread(fd, got, 0)
	}
	unix.Close(fd)
	if rerr := unix.Unlink(p); err == nil {
		err = rerr
	}
	if err == nil && string(got) != string(want) {
		err = errors.New("health data mismatch")
	}
	if err != nil {
		return fmt.Errorf("health %s: %w", p, err)
	}
	return nil
}

// GCLease replays the GC lease newer PosixStores take at the root before
// a GC round: mkdir .ucm_gc.lock (a second mkdir is EEXIST), a heartbeat
// file in it created, utime'd and stat'ed, .ucm_gc.checktime touched
// (created when utime says ENOENT), the lock directory and the root
// listed, the lock taken over as a stale one (renamed to
// .ucm_gc.stale.<who>, emptied, removed), claimed again and released.
func (s *Store) GCLease(who string) error {
	lock := filepath.Join(s.Root, ".ucm_gc.lock")
	hb := filepath.Join(lock, "hb."+who)
	check := filepath.Join(s.Root, ".ucm_gc.checktime")
	claim := func() error {
		if err := unix.Mkdir(lock, 0o755); err != nil {
			return fmt.Errorf("lease: mkdir: %w", err)
		}
		return touch(hb)
	}
	if err := claim(); err != nil {
		return err
	}
	if err := unix.Mkdir(lock, 0o755); !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("lease: a second mkdir: %v, want EEXIST", err)
	}
	if err := touch(check); err != nil {
		return fmt.Errorf("lease: checktime: %w", err)
	}
	ents, err := os.ReadDir(lock)
	if err != nil || len(ents) != 1 || ents[0].Name() != "hb."+who {
		return fmt.Errorf("lease: the lock holds %v (%v), want its heartbeat", ents, err)
	}
	stale := filepath.Join(s.Root, ".ucm_gc.stale."+who)
	if err := unix.Rename(lock, stale); err != nil {
		return fmt.Errorf("lease: take over: %w", err)
	}
	root, err := os.ReadDir(s.Root)
	if err != nil {
		return err
	}
	found := false
	for _, e := range root {
		found = found || e.Name() == ".ucm_gc.stale."+who
	}
	if !found {
		return errors.New("lease: the parked lock is not listed at the root")
	}
	if err := os.Remove(filepath.Join(stale, "hb."+who)); err != nil {
		return err
	}
	if err := unix.Rmdir(stale); err != nil {
		return fmt.Errorf("lease: remove the parked lock: %w", err)
	}
	if err := claim(); err != nil {
		return err
	}
	if err := unix.Unlink(hb); err != nil {
		return err
	}
	return unix.Rmdir(lock)
}

// DumpEmpty publishes block id with no bytes, as UCM's own store tests
// make a block whose existence is all that counts: viaTmp, a 0-byte
// <id>.tmp created and renamed to <id>; otherwise <id> created under its
// final name and closed. Both with the dump's open flags.
func (s *Store) DumpEmpty(id string, viaTmp bool) error {
	name := s.Path(id, viaTmp)
	fd, err := unix.Open(name, s.openFlags(true), 0o644)
	if err != nil {
		return fmt.Errorf("empty dump: open %s: %w", name, err)
	}
	unix.Close(fd)
	if viaTmp {
		if err := unix.Rename(name, s.Path(id, false)); err != nil {
			return fmt.Errorf("empty dump: rename: %w", err)
		}
	}
	return nil
}

// GCConfig replays the GC config guard newer PosixStores run at the root
// at start: the gate directory .ucm_gc.cfglock taken by mkdir, the
// members of .ucm_gc.members/ (made by mkdir, EEXIST fine) listed with
// .ucm_gc.cfgchecktime touched as the shared clock, the config published
// as .ucm_gc.config.tmp.<who> (O_CREAT|O_EXCL, written, fsync'ed, renamed
// over .ucm_gc.config) and read back by stat and pread, this instance's
// member file mb.<who> touched, the gate released by rmdir; at the end
// the member file removed. The read-back config must equal payload.
func (s *Store) GCConfig(who, payload string) error {
	gate := filepath.Join(s.Root, ".ucm_gc.cfglock")
	members := filepath.Join(s.Root, ".ucm_gc.members")
	config := filepath.Join(s.Root, ".ucm_gc.config")
	member := filepath.Join(members, "mb."+who)
	if err := unix.Mkdir(gate, 0o755); err != nil {
		return fmt.Errorf("gc config: gate: %w", err)
	}
	if err := unix.Mkdir(members, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("gc config: members: %w", err)
	}
	if _, err := os.ReadDir(members); err != nil {
		return fmt.Errorf("gc config: list members: %w", err)
	}
	if err := touch(filepath.Join(s.Root, ".ucm_gc.cfgchecktime")); err != nil {
		return fmt.Errorf("gc config: check time: %w", err)
	}
	tmp := config + ".tmp." + who
	fd, err := unix.Open(tmp, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("gc config: publish: %w", err)
	}
	_, err = unix.Pwrite(fd, []byte(payload), 0)
	if err == nil {
		err = unix.Fsync(fd)
	}
	unix.Close(fd)
	if err == nil {
		err = unix.Rename(tmp, config)
	}
	if err != nil {
		return fmt.Errorf("gc config: publish: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(config, &st); err != nil {
		return fmt.Errorf("gc config: stat: %w", err)
	}
	got := make([]byte, st.Size)
	if fd, err = unix.Open(config, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		_, err = unix.Pread(fd, got, 0)
		unix.Close(fd)
	}
	if err != nil || string(got) != payload {
		return fmt.Errorf("gc config: read back %q (%v), want %q", got, err, payload)
	}
	if err := touch(member); err != nil {
		return fmt.Errorf("gc config: register: %w", err)
	}
	if err := unix.Rmdir(gate); err != nil {
		return fmt.Errorf("gc config: release the gate: %w", err)
	}
	return unix.Unlink(member)
}

// touch is the stores' shared clock: utime(path, NULL), the file created
// when that says ENOENT, then stat for its mtime.
func touch(p string) error {
	err := unix.Utimes(p, nil)
	if errors.Is(err, unix.ENOENT) {
		var fd int
		if fd, err = unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644); err == nil {
			unix.Close(fd)
			err = unix.Utimes(p, nil)
		}
	}
	var st unix.Stat_t
	if err == nil {
		err = unix.Stat(p, &st)
	}
	return err
}
