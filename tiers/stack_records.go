package tiers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ucmfs/ucmfs/hashdir"
)

// Model records are small files the store keeps per model beside the
// blocks, in the first directory tier: <dir>/.models/<model>.<name>. The
// directory starts with '.', so the index rebuild and fsck do not enter
// it (tiers/layout.go). A memory-only stack keeps none: what it records
// goes with the daemon, as its blocks do.

// recordDir is the directory of model records under a tier's root.
const recordDir = ".models"

// recordPath is where model's record name lives, "" without a directory
// tier.
func (s *Stack) recordPath(model, name string) (string, error) {
	if err := hashdir.ValidateModel(model); err != nil {
		return "", err
	}
	if len(s.dirs) == 0 {
		return "", nil
	}
	return filepath.Join(s.dirs[0].Dir(), recordDir, model+"."+name), nil
}

// SaveModelRecord stores data as model's record name, durably (a temp
// file fsynced, then renamed over the old one).
func (s *Stack) SaveModelRecord(model, name string, data []byte) error {
	p, err := s.recordPath(model, name)
	if err != nil || p == "" {
		return err
	}
	d := s.dirs[0]
	return d.do("record", func() error {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		tmp := p + ".tmp-" + randomSuffix()
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if err = errors.Join(err, f.Close()); err == nil {
			err = os.Rename(tmp, p)
		}
		if err != nil {
			os.Remove(tmp)
			return fmt.Errorf("model record %s: %w", p, err)
		}
		return syncDir(filepath.Dir(p))
	}, nil)
}

// ModelRecord reads model's record name: ErrNotFound when there is none.
func (s *Stack) ModelRecord(model, name string) ([]byte, error) {
	p, err := s.recordPath(model, name)
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, ErrNotFound
	}
	var b []byte
	err = s.dirs[0].do("record", func() error {
		var err error
		b, err = os.ReadFile(p)
		return err
	}, nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("model record %s: %w", p, ErrNotFound)
	}
	return b, err
}

// RemoveModelRecord removes model's record name, if any.
func (s *Stack) RemoveModelRecord(model, name string) error {
	p, err := s.recordPath(model, name)
	if err != nil || p == "" {
		return err
	}
	return s.dirs[0].do("record", func() error {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}, nil)
}
