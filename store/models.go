package store

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/layout/registry"
)

// modelSet is the registry of model directories: the models made with
// mkdir, and every model a tier holds a file of. It is seeded at mount
// from the tiers' indexes and the top-level directories of the directory
// tiers; a model first seen in a tier later (another daemon on a shared
// tier, seen in its directory within the tier's revalidation TTL) joins
// it at its first lookup or listing.
type modelSet struct {
	mu    sync.Mutex
	names map[string]struct{}
}

func (m *modelSet) init() { m.names = make(map[string]struct{}) }

func (m *modelSet) add(name string) {
	m.mu.Lock()
	m.names[name] = struct{}{}
	m.mu.Unlock()
}

func (m *modelSet) remove(name string) {
	m.mu.Lock()
	delete(m.names, name)
	m.mu.Unlock()
}

func (m *modelSet) has(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.names[name]
	return ok
}

// list returns the registered names, sorted.
func (m *modelSet) list() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.names))
}

// tierModels returns the names of the models any tier holds files of.
func (s *Store) tierModels() []string {
	return s.stack.Models()
}

// seedModels fills the registry at mount: models in the tiers' indexes,
// and the valid model names among the top-level directories of the
// directory tiers (a model made empty stays a model).
func (s *Store) seedModels() {
	for _, n := range s.tierModels() {
		s.models.add(n)
	}
	for _, t := range s.stack.Tiers() {
		if !t.Persistent {
			continue
		}
		for _, n := range dirNames(t.Dir) {
			if format.ValidateModel(n) == nil {
				s.models.add(n)
			}
		}
	}
	for _, n := range s.models.list() {
		s.applySettings(n)
	}
	s.adoptLayouts()
}

// Refresh adds to the registry the models tiers hold now.
func (ms Models) Refresh() {
	for _, n := range ms.s.tierModels() {
		ms.s.models.add(n)
	}
}

// Exists reports whether model is registered or held by a tier
// (registering it then).
func (ms Models) Exists(model string) bool {
	if ms.s.models.has(model) {
		return true
	}
	if ms.s.stack.HasModel(model) { // a shared tier answers from its directory
		ms.s.models.add(model)
		return true
	}
	return false
}

// modelUsage is what one model stores: its distinct block files and the
// bytes of its blocks and sidecars, each file counted once however many
// tiers hold it.
type modelUsage struct {
	Blocks int64
	Bytes  int64
}

// Usage reads the model's counters from the stack (O(1): the tiers keep
// them per model as files come and go; see tiers.Stack.ModelUsage).
func (ms Models) Usage(model string) modelUsage {
	c := ms.s.stack.ModelUsage(model)
	return modelUsage{Blocks: c.Blocks, Bytes: c.Bytes}
}

// quotaRecheck is how long a model's measured use serves quota checks
// before it is measured again; publishes through this mount are added to
// it at once.
const quotaRecheck = 2 * time.Second

// quotaTable holds the quotas set through the quota xattr (persisted in
// the models' settings records, settings.go) and the last measured use of each quota'd model.
type quotaTable struct {
	mu    sync.Mutex
	limit map[string]int64
	used  map[string]measured
}

// measured is a model's use in bytes and when it was measured.
type measured struct {
	bytes int64
	at    time.Time
}

func (q *quotaTable) init() {
	q.limit = make(map[string]int64)
	q.used = make(map[string]measured)
}

// set sets model's quota in bytes; 0 removes it.
func (q *quotaTable) set(model string, limit int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.used, model)
	if limit <= 0 {
		delete(q.limit, model)
		return
	}
	q.limit[model] = limit
}

// get returns model's quota, 0 when none is set.
func (q *quotaTable) get(model string) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.limit[model]
}

// admit checks that size more bytes fit in model's quota (ErrQuota when
// not) and counts them in, ahead of the publish.
func (s *Store) admit(model string, size int64) error {
	q := &s.quotas
	q.mu.Lock()
	limit, ok := q.limit[model]
	m, fresh := q.used[model]
	q.mu.Unlock()
	if !ok {
		return nil
	}
	if !fresh || time.Since(m.at) > quotaRecheck {
		m = measured{bytes: s.Models().Usage(model).Bytes, at: time.Now()}
	}
	if m.bytes+size > limit {
		return ErrQuota
	}
	m.bytes += size
	q.mu.Lock()
	q.used[model] = m
	q.mu.Unlock()
	return nil
}

// unadmit takes back what admit counted for a publish that did not happen.
func (s *Store) unadmit(model string, size int64) {
	q := &s.quotas
	q.mu.Lock()
	defer q.mu.Unlock()
	if m, ok := q.used[model]; ok {
		m.bytes -= size
		q.used[model] = m
	}
}

// ForgetUsage drops model's measured use so the next check measures it.
func (ms Models) ForgetUsage(model string) {
	ms.s.quotas.mu.Lock()
	delete(ms.s.quotas.used, model)
	ms.s.quotas.mu.Unlock()
}

// Names returns the registered model names, sorted.
func (ms Models) Names() []string { return ms.s.models.list() }

// Add registers an empty model (mkdir), and makes its directory on
// the shared tiers so other hosts' daemons see it too. A model that has
// no settings record yet takes the mount's layout (Options.Layout).
func (ms Models) Add(name string) {
	ms.s.models.add(name)
	if err := ms.s.stack.ShareModel(name); err != nil {
		ms.s.log.Warn("model directory not made on a shared tier", "model", name, "err", err)
	}
	if ms.s.opts.Layout != "" && layoutNamed(ms.s.opts.Layout) != registry.Default() && settingsEqual(ms.s.modelSettings(name), Settings{}) {
		if err := ms.s.setLayout(name, ms.s.opts.Layout); err != nil {
			ms.s.log.Warn("default layout not recorded", "model", name, "err", err)
		}
	}
}

// Abandon takes back Models.Add of name when the making failed after
// it (its owner's record not written: a tier refused the model's
// directory, a link planted on a share at its name): the model leaves the
// registry, so it is neither listed nor anyone's.
func (ms Models) Abandon(name string) {
	if !ms.s.modelEmpty(name) {
		return // a file of it is on a tier: it stays a model
	}
	ms.s.models.remove(name)
	ms.s.trees.drop(name)
	ms.s.forgetSettings(name)
}

// modelEmpty reports whether no tier holds a file of model.
func (s *Store) modelEmpty(model string) bool {
	empty := true
	s.stack.List(model, func(format.Key) bool { empty = false; return false })
	return empty
}

// Remove drops an empty model for the user uid (ErrNotEmpty while a
// tier holds a file of it; ErrNotOwner for a user other than the admin
// while it has a quota the admin set: quota_rights.go): its directories go
// from every tier (after the GPU loads of its blocks), and it leaves the
// registry with its hits, quota and sidecar setting.
func (ms Models) Remove(model string, uid uint32) error {
	if err := ms.s.checkRemoval(model, uid); err != nil {
		return err
	}
	if !ms.s.modelEmpty(model) {
		return fmt.Errorf("model %s still holds files: %w", model, ErrNotEmpty)
	}
	done := ms.s.ModelRemoval(model)
	err := ms.s.stack.RemoveModel(model)
	done()
	if err != nil {
		return err
	}
	ms.s.models.remove(model)
	ms.s.trees.drop(model)
	ms.s.ForgetHits(format.Key{Model: model}, true)
	ms.s.quotas.set(model, 0)
	ms.s.forgetSettings(model)
	ms.s.log.Info("model removed", "model", model)
	return nil
}

// quota is model's quota in bytes, 0 when none is set.
func (s *Store) quota(model string) int64 { return s.quotas.get(model) }

// dirNames lists the names of the directories in dir (nil on any error).
func dirNames(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
