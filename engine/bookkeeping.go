package engine

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
)

// bookkeeping is the engine's view of detail_state: which details are due
// (the statements are load.DetailState's; a list page records what it
// listed, a detail page what it fetched: load.ListPage, load.DetailPage).
type bookkeeping struct {
	details *load.DetailState
}

func newBookkeeping(schema string) (*bookkeeping, error) {
	ds, err := load.NewDetailState(schema)
	if err != nil {
		return nil, err
	}
	return &bookkeeping{details: ds}, nil
}

// dueDetail is an entity whose detail must be fetched.
type dueDetail = load.DueDetail

// dueDetails lists the listed entities of s whose detail-owned list fields
// changed since their detail was fetched, whose staggered refresh day is
// today, or whose detail is older than maxAge, stalest first (see
// load.DetailState), each with its stored list record (dueDetail.Base: the
// base its detail is read with, see stream.Record.Base).
func (b *bookkeeping) dueDetails(ctx context.Context, pool *pgxpool.Pool, s *stream.Stream, maxAge time.Duration, now time.Time) ([]dueDetail, error) {
	return b.details.Due(ctx, pool, s.Name, load.RefreshPolicy{MaxAge: maxAge, Now: now}, load.ListRecordsOf(s))
}

// countDue counts what dueDetails would return.
func (b *bookkeeping) countDue(ctx context.Context, pool *pgxpool.Pool, stream string, maxAge time.Duration, now time.Time) (int, error) {
	return b.details.CountDue(ctx, pool, stream, load.RefreshPolicy{MaxAge: maxAge, Now: now})
}
