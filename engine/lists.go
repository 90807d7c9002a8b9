package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// listing pages through a complete list, committing each page, and ends the
// warehouse listing (soft deletes) once the list is exhausted — with no
// extra request: the end is its own small transaction.
type listing struct {
	stream    string // sync_state stream
	partition string // sync_state partition
	endpoint  string // the list's endpoint (AGENCY_PAGING's name)
	table     string // soft-deletable table of the list ("" for none)
	scope     map[string]any
	complete  bool // the list is complete: unseen rows get _deleted_at
	open      func(ctx context.Context) iter.Seq2[*extract.Page, error]
	rows      func(page *extract.Page) transform.Batch
	listed    func(b *transform.Batch) []load.ListedEntity // the page's entities for detail_state (nil: none)
	unlisted  bool                                         // the end marks soft-deleted entities unlisted (load.Page.MarkUnlisted)
	state     func(final bool) *load.Checkpoint
	// unproven, when set, is called when the listing ends without being
	// proven complete, before its last checkpoint is taken.
	unproven func()
}

func runListing(ctx context.Context, r *run, l listing) (pages int, err error) {
	var wl *load.Listing
	if l.complete && l.table != "" {
		if wl, err = r.e.store.NewListing(l.table, l.scope); err != nil {
			return 0, err
		}
	}
	var end *extract.ListEnd
	var landed, rejected int // the list's records that fit, and that did not
	for page, err := range prefetch(ctx, r.e.set.NoPrefetch, l.open) {
		if err != nil {
			return pages, fmt.Errorf("fetch %s page %d: %w", l.name(), pages+1, err)
		}
		end = page.End
		if wl != nil && page.Paged {
			wl.Expect(page.Total)
		}
		p := load.Page{Stream: l.stream, Batch: l.rows(page), Listing: wl}
		landed += p.Batch.Len(l.table)
		rejected += len(p.Batch.Rejects)
		if l.listed != nil {
			p.Listed = l.listed(&p.Batch)
		}
		if l.state != nil {
			p.State = l.state(false)
		}
		if _, err := r.commit(ctx, p); err != nil {
			return pages, err
		}
		pages++
		r.progress.Update(l.name(), pages, page.LastPage)
	}
	last := load.Page{Stream: l.stream, MarkUnlisted: l.unlisted}
	why := unproven(end)
	if why == "" && wl != nil && wl.Short() {
		// The service announced more rows than the listing saw (paging
		// fields that lie, rows that moved between pages): the unseen
		// rows may exist.
		why = fmt.Sprintf("listed %d distinct rows of the %d the service announced", wl.Seen(), wl.Expected())
	}
	// A listing not proven complete soft-deletes nothing, and is not
	// complete: the next run lists again.
	r.judgeListing(r.log, l.endpoint, l.name(), why, end)
	if why != "" && l.unproven != nil {
		l.unproven()
	}
	if why == "" && wl != nil {
		last.Listing, last.EndsListing = wl, true
	}
	// A list whose every record was rejected landed nothing: it is not
	// complete, so its stream is not shown fresh (and a finance list is
	// listed whole again).
	allRejected := landed == 0 && rejected > 0
	if allRejected {
		r.log.Warn("every record of the list was rejected: the list is not complete (see rejected_records)",
			zap.String("list", l.name()), zap.Int("rejected", rejected))
	}
	if l.state != nil {
		last.State = l.state(why == "" && !allRejected)
	}
	counts, err := r.commit(ctx, last)
	if err != nil {
		return pages, err
	}
	r.heldDeletions(counts)
	return pages, nil
}

func (l listing) name() string {
	if l.partition != "" {
		return l.stream + "." + l.partition
	}
	return l.stream
}

// entityList lists every brand or project: their rows, the hashes of their
// detail-owned fields (transform.ListHashes of the page's rows) that decide
// which details are due, and soft deletes at the end.
func entityList(ctx context.Context, r *run, log *zap.Logger, stream, endpoint, table string,
	open func(ctx context.Context) iter.Seq2[*extract.Page, error],
	rows func([]stream.Record) transform.Batch) error {
	pages, err := runListing(ctx, r, listing{
		stream: stream, partition: "list", endpoint: endpoint, table: table, complete: true, open: open,
		rows: func(p *extract.Page) transform.Batch {
			b := rows(recordsOf(p.Records))
			b.Rejects = append(b.Rejects, transform.RecordErrors(stream, p.Rejects)...)
			return b
		},
		listed: func(b *transform.Batch) []load.ListedEntity {
			hashes := transform.ListHashes(b, table)
			entries := make([]listEntry, 0, len(hashes))
			for _, h := range hashes {
				entries = append(entries, listEntry{ID: h.ID, Hash: h.Hash})
			}
			return entries
		},
		unlisted: true,
		state:    func(final bool) *load.Checkpoint { return &load.Checkpoint{Partition: "list", Succeeded: final} },
	})
	log.Debug("listed", zap.Int("pages", pages))
	return err
}

// brandsList lists every brand, with a financial snapshot per brand for today.
func (r *run) brandsList(ctx context.Context, log *zap.Logger) error {
	return entityList(ctx, r, log, StreamBrands, stream.EndpointBrands, "brands",
		func(ctx context.Context) iter.Seq2[*extract.Page, error] {
			return r.client.List(ctx, stream.EndpointBrands, extract.ListQuery{})
		},
		func(recs []stream.Record) transform.Batch {
			return r.transform(StreamBrands, stream.EndpointBrands, nil, recs, "", nil)
		})
}

// projectsList lists every project. The list is complete on purpose: only a
// complete listing shows deletions, and at up to 1000 projects a request it
// costs what an updated_since listing would. Details are fetched for the
// projects whose detail-owned fields (updated_at included, the budget
// aggregate not) changed: transform.ListHashes.
func (r *run) projectsList(ctx context.Context, log *zap.Logger) error {
	return entityList(ctx, r, log, StreamProjects, stream.EndpointProjects, "projects",
		func(ctx context.Context) iter.Seq2[*extract.Page, error] {
			return r.client.List(ctx, stream.EndpointProjects, extract.ListQuery{})
		},
		func(recs []stream.Record) transform.Batch {
			return r.transform(StreamProjects, stream.EndpointProjects, nil, recs, "", nil)
		})
}

// financeFullEvery is how often each finance list that takes updated_since
// is listed completely: SYNC_FINANCE_FULL_EVERY, but never less often than
// SYNC_COMMS_REFRESH_AGE, so that a record corrected without moving its
// updated_at is read again within the same age as an old e-mail.
func (e *Engine) financeFullEvery() time.Duration {
	return min(e.set.FinanceFullEvery, e.set.CommsRefreshAge)
}

// financeRows transforms records of a finance list.
func (r *run) financeRows(endpoint string, params map[string]string, recs []stream.Record) transform.Batch {
	return r.transform(StreamFinance, endpoint, params, recs, "", nil)
}

// financeCursor is the cursor of one finance list.
type financeCursor struct {
	FullAt              *time.Time `json:"full_at,omitempty"`               // last complete listing
	UpdatedSinceIgnored bool       `json:"updated_since_ignored,omitempty"` // the server ignores the filter
}

// financeList describes one finance list for syncFinance.
type financeList struct {
	partition   string // sync_state partition and log name
	endpoint    string
	table       string
	rejects     string // transform stream of its rejects
	scope       map[string]any
	incremental bool // the list honours updated_since and its rows carry updated_at
	open        func(ctx context.Context, since time.Time) iter.Seq2[*extract.Page, error]
	rows        func([]stream.Record) transform.Batch
}

// finance syncs the finance lists. Lists with updated_at are fetched with
// updated_since (the watermark's day minus one), and completely at least
// every FinanceFullEvery so deletions are seen (and at least every
// CommsRefreshAge: financeFullEvery); a server found ignoring the filter is
// no longer trusted with it.
func (r *run) finance(ctx context.Context, log *zap.Logger) error {
	c := r.client
	var lists []financeList
	// The lists that honour updated_since; each is its own partition and table.
	for _, l := range []struct {
		name     string
		rejects  string
		endpoint string
	}{
		{"budgets", stream.RejectBudgets, stream.EndpointBudgets},
		{"invoices", stream.RejectInvoices, stream.EndpointInvoices},
		{"collections", stream.RejectCollections, stream.EndpointCollections},
		{"payments", stream.RejectPayments, stream.EndpointPayments},
	} {
		lists = append(lists, financeList{partition: l.name, endpoint: l.endpoint, table: l.name, rejects: l.rejects, incremental: true,
			open: func(ctx context.Context, s time.Time) iter.Seq2[*extract.Page, error] {
				return c.List(ctx, l.endpoint, extract.ListQuery{UpdatedSince: s})
			},
			rows: func(recs []stream.Record) transform.Batch {
				return r.financeRows(l.endpoint, nil, recs)
			}})
	}
	for _, level := range []string{"project", "brand"} {
		lists = append(lists, financeList{partition: "profitability." + level, endpoint: stream.EndpointProfitability, table: "profitability",
			rejects: stream.RejectProfitability, scope: map[string]any{"level": level},
			open: func(ctx context.Context, _ time.Time) iter.Seq2[*extract.Page, error] {
				return c.List(ctx, stream.EndpointProfitability, extract.ListQuery{Params: map[string]string{"level": level}})
			},
			rows: func(recs []stream.Record) transform.Batch {
				return r.financeRows(stream.EndpointProfitability, map[string]string{"level": level}, recs)
			}})
	}
	lists = append(lists, financeList{partition: "summary", endpoint: stream.EndpointAgencySummary, table: "agency_finance_summary", rejects: stream.RejectAgencySummary,
		open: func(ctx context.Context, _ time.Time) iter.Seq2[*extract.Page, error] {
			return c.List(ctx, stream.EndpointAgencySummary, extract.ListQuery{})
		},
		rows: func(recs []stream.Record) transform.Batch {
			return r.financeRows(stream.EndpointAgencySummary, nil, recs)
		}})
	// A failing list does not keep the others from syncing; budget, quota,
	// credentials and interruption stop them all.
	var errs []error
	partitions := listPartitions[TaskFinance].partitions // in the order of lists
	if len(partitions) != len(lists) {
		return fmt.Errorf("sync finance: %d lists for %d partitions", len(lists), len(partitions))
	}
	for i, fl := range lists {
		if r.listsDone[StreamFinance+"/"+partitions[i]] {
			log.Info("finance list completed by an unfinished run today; not listed again", zap.String("list", partitions[i]))
			continue
		}
		if err := syncFinance(ctx, r, log, fl); err != nil {
			if stopsTask(ctx, err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func syncFinance(ctx context.Context, r *run, log *zap.Logger, fl financeList) error {
	log = log.With(zap.String("list", fl.partition))
	var cur financeCursor
	var watermark *time.Time
	st, err := r.e.store.GetState(ctx, StreamFinance, fl.partition)
	switch {
	case errors.Is(err, load.ErrNoState):
	case err != nil:
		return err
	default:
		watermark = st.Watermark
		if len(st.Cursor) > 0 {
			if err := json.Unmarshal(st.Cursor, &cur); err != nil {
				return fmt.Errorf("read finance cursor of %s: %w", fl.partition, err)
			}
		}
	}
	now := r.e.set.Now()
	full := !fl.incremental || watermark == nil || cur.UpdatedSinceIgnored || cur.FullAt == nil ||
		now.Sub(*cur.FullAt) >= r.e.financeFullEvery()
	var since time.Time
	if !full {
		since = utcDate(*watermark).AddDate(0, 0, -1)
	}
	ignoredNoticed := false
	encode := func(final bool) *load.Checkpoint {
		c := cur
		if final && full {
			t := now.UTC()
			c.FullAt = &t
		}
		b, _ := json.Marshal(c)
		return &load.Checkpoint{Partition: fl.partition, Watermark: watermark, Cursor: b, Succeeded: final}
	}
	started := watermark
	_, err = runListing(ctx, r, listing{
		stream: StreamFinance, partition: fl.partition, endpoint: fl.endpoint, table: fl.table, scope: fl.scope, complete: full,
		open: func(ctx context.Context) iter.Seq2[*extract.Page, error] { return fl.open(ctx, since) },
		rows: func(p *extract.Page) transform.Batch {
			b := fl.rows(recordsOf(p.Records))
			if fl.incremental {
				for _, v := range b.Column(fl.table, "updated_at") {
					u, ok := v.(time.Time)
					if !ok {
						continue
					}
					if watermark == nil || u.After(*watermark) {
						watermark = &u
					}
					if !full && u.Before(since) && !ignoredNoticed {
						ignoredNoticed = true
						cur.UpdatedSinceIgnored = true
						log.Warn("the server ignores updated_since on this list (it returned records updated before the filter); no longer relying on it",
							zap.Time("updated_since", since), zap.Time("record_updated_at", u))
					}
				}
			}
			b.Rejects = append(b.Rejects, transform.RecordErrors(fl.rejects, p.Rejects)...)
			return b
		},
		state: encode,
		// Records the listing did not reach may be older than those it
		// saw: the watermark stays where it was.
		unproven: func() { watermark = started },
	})
	return err
}
