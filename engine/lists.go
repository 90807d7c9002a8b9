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

// listing pages through a list, committing each page, and ends the
// warehouse listing (soft deletes) once the list is exhausted and proven
// complete — with no extra request: the end is its own small transaction.
type listing struct {
	stream    string // sync_state stream
	partition string // sync_state partition
	endpoint  string // the list's endpoint (AGENCY_PAGING's name)
	table     string // the list's table
	// listing is the warehouse listing the pages belong to; nil for an
	// incremental listing, which soft-deletes nothing.
	listing *load.Listing
	open    func(ctx context.Context) iter.Seq2[*extract.Page, error]
	rows    func(page *extract.Page) transform.Batch
	// listed are a page's entities for detail_state (nil: the list's
	// entities have no details or child lists).
	listed func(b *transform.Batch) []load.ListedEntity
	// unlisted, for an entity list, names what its end marks unlisted.
	unlisted *load.Unlisted
	state    func(final bool) *load.Checkpoint
	// unproven, when set, is called when the listing ends without being
	// proven complete, before its last checkpoint is taken.
	unproven func()
}

// listRead is what one reading of a list saw: its pages, its records that
// fit and that did not, and the verdict of its last page.
type listRead struct {
	pages, landed, rejected int
	end                     *extract.ListEnd
}

// read pages once through the list, committing each page (its rows, the
// keys the warehouse listing sees).
func (l listing) read(ctx context.Context, r *run) (listRead, error) {
	var rd listRead
	for page, err := range prefetch(ctx, r.e.set.NoPrefetch, l.open) {
		if err != nil {
			return rd, fmt.Errorf("fetch %s page %d: %w", l.name(), rd.pages+1, err)
		}
		rd.end = page.End
		p := &load.ListPage{Stream: l.stream, Batch: l.rows(page), Listing: l.listing, State: l.state(false)}
		if page.Paged {
			p.Total = page.Total
		}
		rd.landed += p.Batch.Len(l.table)
		rd.rejected += len(p.Batch.Rejects)
		if l.listed != nil {
			p.Listed = l.listed(&p.Batch)
		}
		if _, err := r.commit(ctx, p); err != nil {
			return rd, err
		}
		rd.pages++
		r.progress.Update(l.name(), rd.pages, page.LastPage)
	}
	return rd, nil
}

// why is why reading rd does not prove the listing complete ("" when it
// does).
func (l listing) why(rd listRead) string {
	why := unproven(rd.end)
	if wl := l.listing; why == "" && wl != nil && wl.Short() {
		// The service announced more rows than the listing saw (paging
		// fields that lie, rows that moved between pages): the unseen
		// rows may exist.
		why = fmt.Sprintf("listed %d distinct rows of the %d the service announced", wl.Seen(), wl.Expected())
	}
	return why
}

// confirm reads a complete listing of several pages once more when it would
// soft-delete rows: a list that changed while it was paged (a row deleted
// on an early page shifts a later row onto a page already read, and a row
// added keeps the total) can miss a live row while every page and the total
// look whole. The listing keeps the keys of both readings, so only a row
// both missed is soft-deleted; one seen by one reading only waits for the
// next listing.
func (l listing) confirm(ctx context.Context, r *run, first listRead) (listRead, error) {
	if l.listing == nil || first.pages < 2 {
		return first, nil
	}
	unseen, err := r.e.store.Unseen(ctx, l.listing)
	if err != nil || unseen == 0 {
		return first, err
	}
	seen := l.listing.Seen()
	r.log.Info("a listing of several pages would soft-delete rows: reading it once more, so that a row that moved between pages is not deleted",
		zap.String("list", l.name()), zap.Int("pages", first.pages), zap.Int("unseen", unseen))
	again, err := l.read(ctx, r)
	if err != nil {
		return again, err
	}
	if more := l.listing.Seen() - seen; more > 0 {
		r.log.Info("the list changed while it was paged: the rows only the second reading saw are kept",
			zap.String("list", l.name()), zap.Int("rows", more))
	}
	again.landed, again.rejected = first.landed+again.landed, first.rejected+again.rejected
	again.pages += first.pages
	return again, nil
}

func runListing(ctx context.Context, r *run, l listing) (pages int, err error) {
	rd, err := l.read(ctx, r)
	if err != nil {
		return rd.pages, err
	}
	why := l.why(rd)
	if why == "" {
		if rd, err = l.confirm(ctx, r, rd); err != nil {
			return rd.pages, err
		}
		why = l.why(rd)
	}
	pages, end, landed, rejected := rd.pages, rd.end, rd.landed, rd.rejected
	wl := l.listing
	last := &load.ListEnd{Stream: l.stream, Unlisted: l.unlisted}
	// A listing not proven complete soft-deletes nothing, and is not
	// complete: the next run lists again.
	r.judgeListing(r.log, l.endpoint, l.name(), why, end)
	if why != "" && l.unproven != nil {
		l.unproven()
	}
	if why == "" {
		last.Listing = wl
	}
	// A list whose every record was rejected landed nothing: it is not
	// complete, so its stream is not shown fresh (and an incremental list
	// is listed whole again).
	allRejected := landed == 0 && rejected > 0
	if allRejected {
		r.log.Warn("every record of the list was rejected: the list is not complete (see rejected_records)",
			zap.String("list", l.name()), zap.Int("rejected", rejected))
	}
	// A service that caps its pages without saying so leaves the run a gap
	// (judgeListing) until AGENCY_PAGING says the cap: the listing is not
	// complete either, so the next run lists again and says so again.
	capped := end != nil && end.Cap > 0
	last.State = l.state(why == "" && !allRejected && !capped)
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

// lists is the list task of stream s: its listings one after the other,
// each declared first in sync_state (a listing that never completes keeps
// the stream from being fresh). A failing listing does not keep the others
// from running; budget, quota, an interface's failure and interruption stop
// them all. A listing an unfinished run completed today is not listed
// again.
func (r *run) lists(ctx context.Context, s *stream.Stream, log *zap.Logger) error {
	partitions := make([]string, len(s.Lists))
	for i, l := range s.Lists {
		partitions[i] = l.Partition
	}
	if err := r.e.store.DeclarePartitions(ctx, s.Name, partitions); err != nil {
		return err
	}
	var errs []error
	for _, l := range s.Lists {
		if r.listsDone[s.Name+"/"+l.Partition] {
			log.Info("list completed by an unfinished run today; not listed again", zap.String("list", l.Partition))
			continue
		}
		llog := log
		if len(s.Lists) > 1 {
			llog = log.With(zap.String("list", l.Partition))
		}
		if err := r.list(ctx, s, l, llog); err != nil {
			if stopsTask(ctx, err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// fullListEvery is how often a list read with updated_since is listed
// completely: SYNC_FINANCE_FULL_EVERY, but never less often than
// SYNC_COMMS_REFRESH_AGE, so that a record corrected without moving its
// updated_at is read again within the same age as an old e-mail.
func (e *Engine) fullListEvery() time.Duration {
	return min(e.set.IncrementalFullEvery, e.set.Mail.RefreshAge)
}

// listCursor is the cursor of one listing.
type listCursor struct {
	FullAt              *time.Time `json:"full_at,omitempty"`               // last complete listing
	UpdatedSinceIgnored bool       `json:"updated_since_ignored,omitempty"` // the server ignores the filter
}

// listState is a listing's stored state: its watermark (the greatest
// updated_at seen) and cursor.
type listState struct {
	watermark *time.Time
	cur       listCursor
}

// loadList reads the state of listing l of stream s.
func (e *Engine) loadList(ctx context.Context, s string, l stream.List) (listState, error) {
	var ls listState
	st, _, err := e.readState(ctx, s, l.Partition, &ls.cur)
	if err != nil {
		return listState{}, err
	}
	ls.watermark = st.Watermark
	return ls, nil
}

// full says whether listing l is read completely now: always unless it is
// incremental, has a watermark, was last listed completely less than
// fullListEvery ago, and its server honours updated_since.
func (e *Engine) full(l stream.List, ls listState) bool {
	return !l.Incremental || ls.watermark == nil || ls.cur.UpdatedSinceIgnored || ls.cur.FullAt == nil ||
		e.set.Now().Sub(*ls.cur.FullAt) >= e.fullListEvery()
}

// list runs listing l of stream s: completely (soft-deleting what it no
// longer lists, once proven complete), or for an incremental list between
// complete listings, with updated_since the day before its watermark; a
// server found ignoring the filter is no longer trusted with it.
func (r *run) list(ctx context.Context, s *stream.Stream, l stream.List, log *zap.Logger) error {
	ls, err := r.e.loadList(ctx, s.Name, l)
	if err != nil {
		return err
	}
	t := s.ListTable(l)
	full, now := r.e.full(l, ls), r.e.set.Now()
	var since time.Time
	var wl *load.Listing
	if full {
		if wl, err = r.e.store.NewListing(t.Name, s.ListScope(l)); err != nil {
			return err
		}
	} else {
		since = utcDate(*ls.watermark).AddDate(0, 0, -1)
	}
	started := ls.watermark
	lg := listing{stream: s.Name, partition: l.Partition, endpoint: l.Endpoint, table: t.Name, listing: wl,
		open: func(ctx context.Context) iter.Seq2[*extract.Page, error] {
			return r.client.List(ctx, l.Endpoint, extract.ListQuery{Params: l.Params, UpdatedSince: since})
		},
		rows: func(p *extract.Page) transform.Batch { return r.listRows(s, l, p, &ls, since, log) },
		state: func(final bool) *load.Checkpoint {
			c := ls.cur
			if final && full {
				t := now.UTC()
				c.FullAt = &t
			}
			b, _ := json.Marshal(c)
			return &load.Checkpoint{Partition: l.Partition, Watermark: ls.watermark, Cursor: b, Succeeded: final}
		},
		// Records the listing did not reach may be older than those it
		// saw: the watermark stays where it was.
		unproven: func() { ls.watermark = started },
	}
	if _, et, ok := s.Entities(); ok && et == t {
		lg.listed, lg.unlisted = listedEntities(t.Name), unlistedOf(s, t)
	}
	pages, err := runListing(ctx, r, lg)
	log.Debug("listed", zap.String("list", lg.name()), zap.Int("pages", pages))
	return err
}

// listRows transforms a page of listing l of s, with its undecodable
// records as rejects; for an incremental list it raises the watermark to
// the greatest updated_at of the page and notices a server that ignores
// updated_since (since: the filter sent, zero for a complete listing).
func (r *run) listRows(s *stream.Stream, l stream.List, p *extract.Page, ls *listState, since time.Time, log *zap.Logger) transform.Batch {
	b := r.transform(s, l.Endpoint, l.Params, recordsOf(p.Records), s.Rejects(l.Endpoint), p.Rejects)
	if !l.Incremental {
		return b
	}
	for _, v := range b.Column(s.ListTable(l).Name, "updated_at") {
		u, ok := v.(time.Time)
		if !ok {
			continue
		}
		if ls.watermark == nil || u.After(*ls.watermark) {
			ls.watermark = &u
		}
		if !since.IsZero() && u.Before(since) && !ls.cur.UpdatedSinceIgnored {
			ls.cur.UpdatedSinceIgnored = true
			log.Warn("the server ignores updated_since on this list (it returned records updated before the filter); no longer relying on it",
				zap.Time("updated_since", since), zap.Time("record_updated_at", u))
		}
	}
	return b
}

// listedEntities returns the entities of a page of an entity list: the
// list hashes of the rows of table (transform.ListHashes), which decide
// which details and child lists are due.
func listedEntities(table string) func(b *transform.Batch) []load.ListedEntity {
	return func(b *transform.Batch) []load.ListedEntity {
		hashes := transform.ListHashes(b, table)
		out := make([]load.ListedEntity, 0, len(hashes))
		for _, h := range hashes {
			out = append(out, load.ListedEntity{ID: h.ID, Hash: h.Hash})
		}
		return out
	}
}

// unlistedOf names what the end of s's entity list marks unlisted: its
// table's soft-deleted entities, and their rows of each child list.
func unlistedOf(s *stream.Stream, t *stream.Table) *load.Unlisted {
	u := &load.Unlisted{Table: t.Name}
	for _, ep := range s.EndpointsOf(stream.KindChild) {
		if ct := s.RecordTable(ep.Name); ct != nil {
			u.Children = append(u.Children, ct.Name)
		}
	}
	return u
}
