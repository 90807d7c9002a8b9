package engine

import (
	"context"
	"fmt"
)

// RefreshMetrics sets the series that describe the warehouse rather than this
// process — today's quota spent and left, each stream's last success — from
// the warehouse, as status reads them. serve calls it at start, so a restart
// shows the truth before its first scheduled sync.
func (e *Engine) RefreshMetrics(ctx context.Context) error {
	if e.metrics == nil {
		return nil
	}
	rep, err := e.Status(ctx, 0)
	if err != nil {
		return fmt.Errorf("refresh metrics: %w", err)
	}
	e.metrics.QuotaSpent.Set(float64(rep.QuotaSpent))
	e.metrics.QuotaLeft.Set(float64(rep.QuotaLeft))
	for _, s := range rep.Streams {
		e.metrics.OpenRejects.WithLabelValues(s.Stream).Set(float64(s.Rejected))
	}
	if err := e.PublishFreshness(ctx); err != nil {
		return fmt.Errorf("refresh metrics: %w", err)
	}
	return nil
}

// PublishFreshness sets agencysync_last_success_timestamp_seconds of every
// stream from the warehouse (the sync_freshness view, the definition that
// `agencysync status` and analysts read too), so that /metrics agrees with
// them to the second; a stream that never completed has no series. Serve
// calls it at start and the engine after each run. Without metrics it does
// nothing.
func (e *Engine) PublishFreshness(ctx context.Context) error {
	if e.metrics == nil {
		return nil
	}
	fresh, err := e.store.Freshness(ctx)
	if err != nil {
		return fmt.Errorf("publish freshness: %w", err)
	}
	seen := map[string]bool{}
	for _, f := range fresh {
		if f.LastSuccessAt == nil {
			continue
		}
		seen[f.Stream] = true
		e.metrics.LastSuccess.WithLabelValues(f.Stream).Set(float64(f.LastSuccessAt.UnixNano()) / 1e9)
	}
	for _, s := range e.streamNames() {
		if !seen[s] {
			e.metrics.LastSuccess.DeleteLabelValues(s)
		}
	}
	return nil
}
