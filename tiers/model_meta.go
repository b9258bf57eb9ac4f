package tiers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ucmfs/ucmfs/format"
	"golang.org/x/sys/unix"
)

// A model's settings record (docs/format.md, "Model settings") is a small
// file the store owns and the tiers keep: <tierdir>/<model>/ModelMetaName
// in every persistent directory tier, written atomically (a temp file in
// the model directory, fsync, rename, fsync of the directory). It is read
// at the first ModelMeta of a model from the first directory tier that
// has it, then served from memory; a memory-only stack keeps it in memory
// only. The tiers treat its bytes as opaque.

// ModelMetaName is the settings file of a model in a tier directory. Its
// leading '.' keeps it out of every layout rule: the layout walk skips it
// by name.
const ModelMetaName = ".ucmfs-model.json"

// modelMetas is the stack's copy of every model's record read or written
// this run (nil: read, and absent).
type modelMetas struct {
	mu sync.Mutex
	m  map[string][]byte
}

// ModelMeta returns model's settings record, ErrNotFound when none was
// ever written.
func (s *Stack) ModelMeta(model string) ([]byte, error) {
	if err := format.ValidateModel(model); err != nil {
		return nil, err
	}
	s.metas.mu.Lock()
	b, ok := s.metas.m[model]
	s.metas.mu.Unlock()
	if !ok {
		b = s.readMeta(model)
		s.metas.mu.Lock()
		if s.metas.m == nil {
			s.metas.m = make(map[string][]byte)
		}
		if cur, raced := s.metas.m[model]; raced {
			b = cur // a SetModelMeta meanwhile wins
		} else {
			s.metas.m[model] = b
		}
		s.metas.mu.Unlock()
	}
	if b == nil {
		return nil, fmt.Errorf("settings of model %s: %w", model, ErrNotFound)
	}
	return append([]byte(nil), b...), nil
}

// readMeta reads the record from the first directory tier that has it.
func (s *Stack) readMeta(model string) []byte {
	for _, d := range s.dirs {
		var b []byte
		err := d.do("read settings", func() error {
			var err error
			b, err = os.ReadFile(filepath.Join(d.root, model, ModelMetaName))
			return err
		}, nil)
		if err == nil {
			return b
		}
		if !isENOENT(err) {
			s.log.Warn("model settings unreadable", "model", model, "tier", d.kind, "err", err)
		}
	}
	return nil
}

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
		s.metas.m = make(map[string][]byte)
	}
	s.metas.m[model] = b
	s.metas.mu.Unlock()
	var errs []error
	for _, d := range s.dirs {
		if err := d.do("write settings", func() error { return writeMeta(filepath.Join(d.root, model), b) }, nil); err != nil {
			errs = append(errs, fmt.Errorf("%s tier: settings of model %s: %w", d.kind, model, osErr("write", err)))
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

// writeMeta writes b as dir/ModelMetaName: temp file, fsync, rename,
// fsync of dir.
func writeMeta(dir string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(dir, ModelMetaName+tmpPrefix+randomSuffix())
	f, err := openFile(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, ModelMetaName))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
