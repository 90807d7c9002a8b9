package config

import (
	"errors"
	"testing"
	"time"
)

// The default SYNC_COMMS_REFRESH_AGE keeps the large agency's nightly run
// within 2 % of the default daily quota with its share of the rolling
// re-read: 1 000 000 e-mails at 1000 a request are about 1 000 pages for a
// full re-read, so a night reads ⌈1 000 ÷ days⌉ of them, plus up to two more
// (the last day taken overshoots the share by at most a busy day's 2 000
// e-mails, and a range rounds up); the nightly run without it takes 168
// requests (BENCHMARKS.md, figure 8), so the share must stay within 32. And
// an old e-mail must not stay stale for more than a quarter.
func TestDefaultCommsRefreshAgeKeepsTheNightlyUnderTwoPercent(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, env(nil), noFiles)
	days := int(cfg.CommsRefreshAge / (24 * time.Hour))
	if days < 1 {
		t.Fatalf("default SYNC_COMMS_REFRESH_AGE %s is under a day", cfg.CommsRefreshAge)
	}
	const fullReread, nightlyWithout = 1000, 168
	share := (fullReread+days-1)/days + 2
	if limit := cfg.DailyQuota / 50; nightlyWithout+share > limit {
		t.Errorf("default SYNC_COMMS_REFRESH_AGE %s: a nightly share of %d pages makes the nightly run %d requests, more than %d (2 %% of the quota)",
			cfg.CommsRefreshAge, share, nightlyWithout+share, limit)
	}
	if cfg.CommsRefreshAge > 92*24*time.Hour {
		t.Errorf("default SYNC_COMMS_REFRESH_AGE %s: an old e-mail's late edit would take more than a quarter to land", cfg.CommsRefreshAge)
	}
}

func TestCommsRefreshAgeMustBePositive(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0s", "-24h", "soon"} {
		_, err := loadTest(env(map[string]string{"SYNC_COMMS_REFRESH_AGE": v}), noFiles)
		var ce *Error
		if !errors.As(err, &ce) || ce.Variable != "SYNC_COMMS_REFRESH_AGE" {
			t.Errorf("SYNC_COMMS_REFRESH_AGE=%s: %v, want an error naming the variable", v, err)
		}
	}
}
