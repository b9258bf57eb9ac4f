package tiers

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers/rootfs"
	"github.com/ucmfs/ucmfs/tiers/tier"
	"golang.org/x/sys/unix"
)

// A model's settings record (docs/format.md, "Model settings") is a small
// file the store owns and the tiers keep: <tierdir>/<model>/ModelMetaName
// in every persistent directory tier, written atomically (a temp file in
// the model directory, fsync, rename, fsync of the directory). It is read
// at the first ModelMeta of a model from the first directory tier that
// has it, then served from memory; a memory-only stack keeps it in memory
// only. The tiers treat its bytes as opaque.

// modelMetas is the stack's copy of every model's record read or written
// this run (b nil: read, and absent).
type modelMetas struct {
	mu sync.Mutex
	m  map[string]metaRecord
}

// metaRecord is a model's settings record and where it came from.
type metaRecord struct {
	b      []byte
	shared bool // read from a shared tier, where other hosts write too
}

// ModelMeta returns model's settings record, ErrNotFound when none was
// ever written. shared says it was read from a shared tier (no private
// tier has it, and this daemon did not write it this run): other hosts
// and their users write there, so what it says about users (uids are
// host-local) is not this host's to take.
func (s *Stack) ModelMeta(model string) (b []byte, shared bool, err error) {
	if err := format.ValidateModel(model); err != nil {
		return nil, false, err
	}
	s.metas.mu.Lock()
	r, ok := s.metas.m[model]
	s.metas.mu.Unlock()
	if !ok {
		r = s.readMeta(model)
		s.metas.mu.Lock()
		if s.metas.m == nil {
			s.metas.m = make(map[string]metaRecord)
		}
		if cur, raced := s.metas.m[model]; raced {
			r = cur // a SetModelMeta meanwhile wins
		} else {
			s.metas.m[model] = r
		}
		s.metas.mu.Unlock()
	}
	if r.b == nil {
		return nil, false, fmt.Errorf("settings of model %s: %w", model, ErrNotFound)
	}
	return append([]byte(nil), r.b...), r.shared, nil
}

// readMeta reads the record from the first directory tier that has it,
// private tiers first.
func (s *Stack) readMeta(model string) metaRecord {
	for _, shared := range []bool{false, true} {
		for _, d := range s.dirs {
			if d.Shared() != shared {
				continue
			}
			if b := s.readMetaFrom(d, model); b != nil {
				return metaRecord{b: b, shared: shared}
			}
		}
	}
	return metaRecord{}
}

// readMetaFrom reads model's record from the directory tier d (nil: none
// there, or unreadable, which is logged).
func (s *Stack) readMetaFrom(d tier.Lower, model string) []byte {
	var b []byte
	err := d.Do("read settings", func() error {
		f, err := d.Root().OpenRegular(model + "/" + ModelMetaName) // no link followed
		if err != nil {
			return err
		}
		defer f.Close()
		b, err = io.ReadAll(io.LimitReader(f, maxMetaSize))
		return err
	})
	if err == nil {
		return b
	}
	if !tier.IsENOENT(err) {
		s.log.Warn("model settings unreadable", "model", model, "tier", d.Name(), "err", err)
	}
	return nil
}

// maxMetaSize bounds the bytes read of a settings record (they are a few
// hundred; one on a shared tier may be anything).
const maxMetaSize = 1 << 20

// SetModelMeta replaces model's settings record: in memory at once, and
// atomically in every persistent directory tier (creating the model
// directory there). The error joins those of the tiers that failed; the
// record is kept in memory even then.
func (s *Stack) SetModelMeta(model string, b []byte) error {
	if err := format.ValidateModel(model); err != nil {
		return err
	}
	b = append([]byte(nil), b...)
	s.metas.mu.Lock()
	if s.metas.m == nil {
		s.metas.m = make(map[string]metaRecord)
	}
	s.metas.m[model] = metaRecord{b: b}
	s.metas.mu.Unlock()
	var errs []error
	for _, d := range s.dirs {
		if err := d.Do("write settings", func() error { return writeMeta(d.Root(), model, b) }); err != nil {
			errs = append(errs, fmt.Errorf("%s tier: settings of model %s: %w", d.Name(), model, tier.OSErr("write", err)))
		}
	}
	return errors.Join(errs...)
}

// forgetMeta drops model's record from memory (its directories are gone).
func (s *Stack) forgetMeta(model string) {
	s.metas.mu.Lock()
	delete(s.metas.m, model)
	s.metas.mu.Unlock()
}

// writeMeta writes b as dir/ModelMetaName beneath r: temp file, fsync,
// rename, fsync of dir.
func writeMeta(r rootfs.FS, dir string, b []byte) error {
	if err := tier.MkdirAllDurable(r, dir, 0o755); err != nil {
		return err
	}
	tmp := dir + "/" + ModelMetaName + tier.TmpPrefix + tier.RandomSuffix()
	f, err := r.OpenFile(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = r.SyncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, dir+"/"+ModelMetaName, 0)
	}
	if err != nil {
		_ = r.Unlink(tmp)
		return err
	}
	return r.SyncDir(dir)
}
