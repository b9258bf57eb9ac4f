package main

import (
	"log/slog"
	"time"
)

// sharedKinds are the tier kinds other hosts' daemons may share.
var sharedKinds = map[string]bool{"nfs": true, "ds3fs": true}

// hasSharedTier reports whether cfg has an nfs or ds3fs tier.
func hasSharedTier(cfg mountConfig) bool {
	for _, t := range cfg.Tiers {
		if sharedKinds[t.Kind] {
			return true
		}
	}
	return false
}

// The negative TTL is the one bound on how long any host may be wrong
// about a block another host published or removed. A miss is cached by
// the kernel for it and then asked of the directory. A removal must get
// through two caches, the daemon's index and the kernel's entries, so each
// keeps half of it.

// sharedRevalidate is how long a shared tier trusts what it knows of its
// directory: half the negative TTL.
func sharedRevalidate(cfg mountConfig) time.Duration {
	return max(cfg.NegativeTTL/2, time.Nanosecond)
}

// sharedRescan is how often a shared tier checks all its shards in the
// background: with --kv-events, every negative TTL (at least a second),
// so routers hear of the blocks other hosts publish there within it; else
// the tier's default (a minute).
func sharedRescan(cfg mountConfig) time.Duration {
	if cfg.KVEvents == "" {
		return 0
	}
	return max(cfg.NegativeTTL, time.Second)
}

// clampEntryTTL bounds the kernel's cache of entries and attributes by
// half the negative TTL when a tier is shared.
func clampEntryTTL(cfg *mountConfig, log *slog.Logger) {
	if bound := cfg.NegativeTTL / 2; hasSharedTier(*cfg) && cfg.EntryTTL > bound {
		log.Info("a shared tier bounds the entry TTL by half the negative TTL", "entry_ttl", bound, "asked", cfg.EntryTTL)
		cfg.EntryTTL = bound
	}
}
