package store

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ucmfs/ucmfs/internal/tiertest"
	"github.com/ucmfs/ucmfs/layout/posix"
	"github.com/ucmfs/ucmfs/layout/ucmb"
	"github.com/ucmfs/ucmfs/tiers"
)

// TestSettingsPersist: layout, group, repr_kind and quota are kept in the
// model's record in the tier directory and read back by a new store over
// the same directory; bad values are ErrInvalid, a layout change of a
// model that holds files ErrNotEmpty; the tier walk accepts the record.
func TestSettingsPersist(t *testing.T) {
	dir := t.TempDir()
	open := storeOver(t, dir, Options{})
	s, st := open()
	s.Models().Add(testModel)
	for _, err := range []error{
		s.setLayout(testModel, posix.Name), s.Models().SetGroup(testModel, "swa:4096"),
		s.setReprKind(testModel, "max"), s.Models().SetQuota(testModel, 1<<20, 0),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.setLayout(testModel, "posix"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad layout: %v, want ErrInvalid", err)
	}
	if err := s.Models().SetGroup(testModel, "swa:0"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad group: %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(dir, testModel, tiers.ModelMetaName)); err != nil {
		t.Fatalf("no record in the tier: %v", err)
	}
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := tiers.Fsck(dir, tiers.FsckOptions{}); err != nil || rep.Bad+rep.Leftovers+rep.Errors != 0 {
		t.Errorf("fsck of a tier with a settings record: %+v, %v", rep, err)
	}

	s2, st2 := open()
	defer st2.Close(ctx)
	defer s2.Close()
	if l, g, r, q := s2.Models().Layout(testModel), s2.Models().Group(testModel).String(), s2.Sidecars().Setting(testModel).String(), s2.quota(testModel); l != posix.Name || g != "swa:4096" || r != "max" || q != 1<<20 {
		t.Errorf("after a restart: layout %q group %q repr_kind %q quota %d", l, g, r, q)
	}
	if !s2.Models().Exists(testModel) {
		t.Error("the model is gone after a restart")
	}

	// A model with a file keeps its layout.
	s3 := newTestStore(t, Options{})
	k, d := testBlock(1, 64)
	if _, err := s3.stack.Put(k, d, false); err != nil {
		t.Fatal(err)
	}
	if err := s3.setLayout(testModel, posix.Name); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("layout of a model with files: %v, want ErrNotEmpty", err)
	}
	if err := s3.setLayout(testModel, ucmb.Name); err != nil {
		t.Errorf("the layout it has: %v", err)
	}
}

// TestUnreadableSettingsFailClosed: a model whose settings record does
// not parse is the daemon's, 0700, for the run (its owner is not known),
// not open to all with the defaults' 0755.
func TestUnreadableSettingsFailClosed(t *testing.T) {
	s := newTestStore(t, Options{})
	if err := s.stack.SetModelMeta("broken", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if o := s.Models().Owner("broken"); o.Mode != 0o700 || o.Uid != daemonOwner.Uid {
		t.Errorf("owner of a model with an unreadable record: %+v, want the daemon's, 0700", o)
	}
	if o := s.Models().Owner("no-record"); o != daemonOwner {
		t.Errorf("owner of a model without a record: %+v, want the daemon's, 0755", o)
	}
}

// TestSharedTierOwnerNotTaken: a settings record on a shared tier (written
// by another host, or forged by anyone who can write the share) does not
// give its uid the model here: the model is the daemon's, 0700. The
// record's other settings still apply, and an owner this daemon records
// itself is kept.
func TestSharedTierOwnerNotTaken(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "forged"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := `{"owner":{"uid":4321,"gid":4321,"mode":493}}`
	if err := os.WriteFile(filepath.Join(dir, "forged", tiers.ModelMetaName), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	shared := true
	log := slog.New(slog.DiscardHandler)
	st := tiertest.NewStack(t, log, tiers.MemConfig{Capacity: 16 << 20}, tiers.DirConfig{Kind: "nfs", Dir: dir, Shared: &shared})
	s, err := New(st, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if o := s.Models().Owner("forged"); o != unreadableOwner {
		t.Errorf("owner from a shared tier's record: %+v, want the daemon's, 0700 (%+v)", o, unreadableOwner)
	}
	mine := ModelOwner{Uid: 1000, Gid: 1000, Mode: 0o750}
	if err := s.Models().SetOwner("mine", mine); err != nil {
		t.Fatal(err)
	}
	if o := s.Models().Owner("mine"); o != mine {
		t.Errorf("an owner recorded here: %+v, want %+v", o, mine)
	}
}
