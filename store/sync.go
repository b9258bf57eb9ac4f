package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ucmfs/ucmfs/format"
	"github.com/ucmfs/ucmfs/tiers"
)

// Flush makes blocks durable: every dirty block (of every model when
// model is "", else of model) is written back to the first persistent
// tier and fsynced there (tiers.Stack.FlushAll); then every directory
// tier's filesystem is synced (syncfs), so that blocks written back
// earlier in the background are durable too.
func (s *Store) Flush(ctx context.Context, model string) error {
	if err := s.stack.FlushAll(ctx, model); err != nil {
		return err
	}
	if model == "" {
		// A directory move's record left on a tier: dropped now, so
		// that the next start does not finish a move that was undone.
		if err := s.retryLeftMoves(); err != nil {
			return fmt.Errorf("dropping a directory move's record left: %w", err)
		}
	}
	return s.syncTiers(ctx)
}

// FlushKeys makes the blocks keys durable as Flush does a model's: those
// in memory only are written back and fsynced, then every directory
// tier's filesystem is synced (so those written back earlier are durable
// too). With no keys it only syncs the tiers. It is the fsync of a
// directory: the files the directory lists are its entries.
func (s *Store) FlushKeys(ctx context.Context, keys []format.Key) error {
	if err := s.stack.FlushKeys(ctx, keys); err != nil {
		return err
	}
	return s.syncTiers(ctx)
}

// syncTimeout bounds the sync of one tier's filesystem: a hung network
// filesystem must not hang the request (its kind's own operation timeout
// is at most 2 minutes).
const syncTimeout = 2 * time.Minute

// syncTiers syncs the filesystem of every directory tier, in parallel,
// through the filesystem the tier stands on (tiers.Stack.Syncfs). A
// tier that is Down cannot be synced: its blocks are not known to be
// durable (ETIMEDOUT).
func (s *Store) syncTiers(ctx context.Context) error {
	var dirs []tiers.TierInfo
	for _, t := range s.stack.Tiers() {
		if t.Persistent {
			dirs = append(dirs, t)
		}
	}
	errs := make(chan error, len(dirs))
	for _, d := range dirs {
		if d.Health == tiers.Down {
			errs <- fmt.Errorf("%s tier %s is down: %w", d.Name, d.Dir, tiers.ErrStalled)
			continue
		}
		go func() { errs <- s.stack.Syncfs(d.ID) }()
	}
	timer := time.NewTimer(syncTimeout)
	defer timer.Stop()
	var all []error
	for range dirs {
		select {
		case err := <-errs:
			all = append(all, err)
		case <-timer.C:
			return fmt.Errorf("syncfs of the directory tiers: no answer within %v: %w", syncTimeout, tiers.ErrStalled)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(all...)
}
