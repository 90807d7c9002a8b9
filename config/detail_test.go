package config

import (
	"testing"
	"time"
)

// The default SYNC_DETAIL_MAX_AGE keeps the staggered refresh of a large
// agency's details (200 brands × 20 projects: 200 brand details, 200 contact
// lists, 4 000 project details) within half a percent of the default daily
// quota, so that a nightly run — lists and finance (~30 requests), the day's
// e-mails, 2 % of the projects edited (80 details) and this share — stays
// under 2 % of it (README, "Details").
func TestDefaultDetailMaxAgeKeepsTheDailyShareSmall(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, env(nil), noFiles)
	days := int(cfg.DetailMaxAge / (24 * time.Hour))
	if days < 1 {
		t.Fatalf("default SYNC_DETAIL_MAX_AGE %s is under a day", cfg.DetailMaxAge)
	}
	const requestsPerCycle = 200*2 + 200*20
	share := (requestsPerCycle + days - 1) / days
	if limit := cfg.DailyQuota / 200; share > limit {
		t.Errorf("default SYNC_DETAIL_MAX_AGE %s: %d detail requests a day at 200 × 20, more than %d (0.5 %% of the quota)",
			cfg.DetailMaxAge, share, limit)
	}
	if cfg.DetailMaxAge > 92*24*time.Hour {
		t.Errorf("default SYNC_DETAIL_MAX_AGE %s: details the lists do not show (contacts, general information) would be older than a quarter", cfg.DetailMaxAge)
	}
}
