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

// sharedRevalidate is how long a shared tier trusts what it knows of its
// directory: the negative TTL, the one bound on how long any host may be
// wrong about a block another host published or removed.
func sharedRevalidate(cfg mountConfig) time.Duration {
	return max(cfg.NegativeTTL, time.Nanosecond)
}

// clampEntryTTL bounds the kernel's cache of entries and attributes by
// the negative TTL when a tier is shared: another host may remove a
// block, and this mount must stop showing it within that time.
func clampEntryTTL(cfg *mountConfig, log *slog.Logger) {
	if hasSharedTier(*cfg) && cfg.EntryTTL > cfg.NegativeTTL {
		log.Info("a shared tier bounds the entry TTL by the negative TTL", "entry_ttl", cfg.NegativeTTL, "asked", cfg.EntryTTL)
		cfg.EntryTTL = cfg.NegativeTTL
	}
}
