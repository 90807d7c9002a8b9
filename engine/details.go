package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// fetchedDetail is one entity's detail and child lists, ready to load.
type fetchedDetail struct {
	due   dueDetail
	batch transform.Batch
	gone  bool // 404: deleted since it was listed
	// missing: the detail answered 404 but the child lists did not: they
	// land, the detail is asked again next run.
	missing bool
	// children are the child lists fetched whole, each with its verdict.
	children []childList
}

// childList is one entity's child list as fetched: whole, with the
// verdict of its listing.
type childList struct {
	Endpoint string
	// Short: the list delivered fewer records than its pages announced, so
	// its absentees must not be soft-deleted.
	Short bool
	// End is the verdict of the listing (its last page's).
	End *extract.ListEnd `json:",omitempty"`
}

// why is why the child listing is not proven complete ("" when it is).
func (c *childList) why() string {
	if c.Short {
		return "fewer records than the service announced"
	}
	return unproven(c.End)
}

// childVerdicts sums up the verdicts of a run's listings of one child list,
// so that many entities make one warning: the entities whose listing was
// not proven complete, those whose service capped pages silently, and the
// first verdict of each.
type childVerdicts struct {
	endpoint, what string // the child list's endpoint, and what it lists ("contacts")
	noun           string // the noun of its parent entity ("brand")
	unproven       []string
	capped         []string // entity ids
	why            string
	whyEnd, capEnd *extract.ListEnd
}

// add counts the verdict of entity id's child list c.
func (v *childVerdicts) add(id string, c *childList) {
	why := c.why()
	switch {
	case why != "":
		if len(v.unproven) == 0 {
			v.why, v.whyEnd = why, c.End
		}
		v.unproven = append(v.unproven, id)
	case c.End != nil && c.End.Cap > 0:
		if len(v.capped) == 0 {
			v.capEnd = c.End
		}
		v.capped = append(v.capped, id)
	}
}

// judge records the summed verdicts (see run.judgeListing).
func (v *childVerdicts) judge(r *run, log *zap.Logger) {
	if len(v.unproven) > 0 {
		r.judgeListing(log, v.endpoint, v.of(v.unproven), v.why, v.whyEnd)
	}
	if len(v.capped) > 0 {
		r.judgeListing(log, v.endpoint, v.of(v.capped), "", v.capEnd)
	}
}

// of names the child listings of entities by the list's and the entity's
// declared nouns: "<list> of <noun> 7", "<list> of 12 <noun>s (7, 9, 15, …)".
func (v *childVerdicts) of(ids []string) string {
	if len(ids) == 1 {
		return v.what + " of " + v.noun + " " + ids[0]
	}
	shown := strings.Join(ids[:min(len(ids), 3)], ", ")
	if len(ids) > 3 {
		shown += ", …"
	}
	return fmt.Sprintf("%s of %d %ss (%s)", v.what, len(ids), v.noun, shown)
}

// details fetches the due details and child lists of the selected streams'
// entities, stream after stream, stalest first. Fetching the next entities
// (as many as run.inFlight) overlaps loading the current one.
func (r *run) details(ctx context.Context, req Request, log *zap.Logger) error {
	streams := req.Streams
	if len(streams) == 0 {
		streams = r.e.streamNames()
	}
	var errs []error
	for _, s := range r.e.withEntities(streams) {
		err := r.streamDetails(ctx, s, log.With(zap.String("stream", s.Name)))
		if err != nil {
			if stopsTask(ctx, err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// entityDetails is the details task's work on one stream's entities.
type entityDetails struct {
	s        *stream.Stream
	table    *stream.Table // the entities' table
	verdicts map[string]*childVerdicts
}

func newEntityDetails(s *stream.Stream) *entityDetails {
	_, t, _ := s.Entities()
	d := &entityDetails{s: s, table: t, verdicts: map[string]*childVerdicts{}}
	for _, ep := range s.EndpointsOf(stream.KindChild) {
		d.verdicts[ep.Name] = &childVerdicts{endpoint: ep.Name, what: ep.InventoryName(), noun: t.Noun}
	}
	return d
}

func (r *run) streamDetails(ctx context.Context, s *stream.Stream, log *zap.Logger) error {
	due, err := r.e.book.dueDetails(ctx, r.e.pool, s, r.e.set.DetailMaxAge, r.e.set.Now())
	if err != nil {
		return err
	}
	log.Info("details due", zap.Int("count", len(due)))
	name := s.Name + ".details"
	r.progress.Update(name, 0, len(due))
	ed := newEntityDetails(s)
	defer func() {
		for _, ep := range s.EndpointsOf(stream.KindChild) {
			ed.verdicts[ep.Name].judge(r, log)
		}
	}()
	done := 0
	for fd, err := range r.fetchDetails(ctx, s, due, log) {
		if err != nil {
			return err
		}
		if fd.gone {
			r.dropParts(s, fd.due)
			r.listedGone(ed, fd.due.ID, log)
			done++
			continue
		}
		p, err := r.detailPage(ed, &fd, done+1 == len(due), log)
		if err != nil {
			return err
		}
		counts, err := r.commit(ctx, p)
		if err != nil {
			return err
		}
		r.heldDeletions(counts)
		r.dropParts(s, fd.due)
		done++
		r.progress.Update(name, done, len(due))
		if ctx.Err() != nil {
			return fmt.Errorf("fetch details: %w", ctx.Err())
		}
	}
	return nil
}

// listedGone notes an entity of ed's stream that is listed (live in the
// warehouse) while its detail answers 404: its detail's rows are missing,
// so the run ends warning, and the detail stays due — asked again next run
// — until it answers or a listing that leaves the entity out soft-deletes
// it.
func (r *run) listedGone(ed *entityDetails, id string, log *zap.Logger) {
	log.Warn("a listed entity's detail answered 404: its detail's rows are missing; asked again next run", zap.String("id", id))
	r.note(fmt.Sprintf("%s %s: listed, but its detail answered 404 (not found): its detail's rows are missing; "+
		"asked again next run (a listing that leaves it out soft-deletes it)", ed.table.Noun, id))
}

// fetchDetails fetches the due entities of s in order, each request's
// answer from the spool when a killed run left it there (see part).
// Several are fetched at once when the pace allows it (see run.inFlight),
// and handed over one by one in order.
func (r *run) fetchDetails(ctx context.Context, s *stream.Stream, due []dueDetail, log *zap.Logger) iter.Seq2[fetchedDetail, error] {
	fetchOne := func(ctx context.Context, i int) (fetchedDetail, error) {
		return r.fetchDetail(ctx, s, due[i], log)
	}
	if r.e.set.NoPrefetch {
		return func(yield func(fetchedDetail, error) bool) {
			for i := range due {
				if fd, err := fetchOne(ctx, i); !yield(fd, err) || err != nil {
					return
				}
			}
		}
	}
	return fetchOrdered(ctx, func() int { return r.inFlight(false) }, len(due), fetchOne)
}

// part is the answer of one request of entity d of s — its detail or one
// of its child lists, by endpoint — from the spool when a killed run left
// it there, else fetched by fetch and spooled as soon as it is in: a crash
// loses only the requests in flight, not the entity's answers before them
// nor the entities fetched ahead. An answer that makes the entity gone is
// not spooled.
func (r *run) part(s *stream.Stream, d dueDetail, endpoint string, log *zap.Logger, fetch func() (spooledDetail, bool, error)) (spooledDetail, bool, error) {
	sp := r.spool
	if sp == nil {
		return fetch()
	}
	key := sp.detailKey(s.Name, d.ID, d.Hash, endpoint)
	var sd spooledDetail
	if sp.get(key, &sd) {
		log.Info("answer from the spool", zap.String("id", d.ID), zap.String("endpoint", endpoint))
		return sd, false, nil
	}
	sd, gone, err := fetch()
	if err == nil && !gone {
		sp.put(key, &sd)
	}
	return sd, gone, err
}

// dropParts removes the spooled answers of entity d of s, once committed
// or gone.
func (r *run) dropParts(s *stream.Stream, d dueDetail) {
	sp := r.spool
	if sp == nil {
		return
	}
	for _, ep := range s.Endpoints {
		if k := ep.Kind(); k == stream.KindDetail || k == stream.KindChild {
			sp.drop(sp.detailKey(s.Name, d.ID, d.Hash, ep.Name))
		}
	}
}

// detailPage is the page that commits a fetched entity of ed's stream
// (last: the last one due): its rows, its bookkeeping (fetched, unless its
// detail was missing and only its child lists came) and the child
// listings proven complete, which it ends.
func (r *run) detailPage(ed *entityDetails, fd *fetchedDetail, last bool, log *zap.Logger) (*load.DetailPage, error) {
	s, id := ed.s, fd.due.ID
	p := &load.DetailPage{Stream: s.Name, Batch: fd.batch, State: &load.Checkpoint{Partition: stream.PartitionDetails, Succeeded: last}}
	if fd.missing {
		log.Warn("a listed entity's detail answered 404 while its child lists were served: they are synced, the detail is asked again next run",
			zap.String("id", id))
		r.note(fmt.Sprintf("%s %s: its detail answered 404 (not found) while it is listed and its child lists are served; "+
			"child lists synced, detail asked again next run", ed.table.Noun, id))
	} else {
		p.Table = ed.table.Name
		p.Fetched = &load.FetchedDetail{ID: id, Hash: fd.due.Hash, At: r.e.set.Now()}
	}
	for i := range fd.children {
		c := &fd.children[i]
		ct := s.RecordTable(c.Endpoint)
		l, err := r.e.store.NewListing(ct.Name, map[string]any{ct.ParamColumn().Name: id})
		if err != nil {
			return nil, err
		}
		if why := c.why(); why != "" {
			log.Info("a child list is not proven complete: none of its rows is marked deleted",
				zap.String("id", id), zap.String("list", c.Endpoint), zap.String("reason", why))
		} else {
			p.Children = append(p.Children, l)
		}
		ed.verdicts[c.Endpoint].add(id, c)
	}
	return p, nil
}

// fetchDetail fetches one entity of s: its detail and every page of each of
// its child lists, each answer through the spool (see part). A detail that
// answers 404 makes the entity gone when it has no child lists, or when a
// child list answers 404 too.
func (r *run) fetchDetail(ctx context.Context, s *stream.Stream, d dueDetail, log *zap.Logger) (fetchedDetail, error) {
	fd := fetchedDetail{due: d}
	children := s.EndpointsOf(stream.KindChild)
	for _, ep := range s.EndpointsOf(stream.KindDetail) {
		sd, gone, err := r.part(s, d, ep.Name, log, func() (spooledDetail, bool, error) {
			return r.fetchEntity(ctx, s, ep, d, len(children) > 0)
		})
		switch {
		case err != nil || gone:
			fd.gone = gone
			return fd, err
		case sd.Rejected:
			// A detail that does not decode is a rejected record, not a
			// failed run: it is fetched again when its list entry changes.
			fd.batch.Append(sd.Batch)
			return fd, nil
		}
		fd.missing = fd.missing || sd.Missing
		fd.batch.Append(sd.Batch)
	}
	for _, ep := range children {
		sd, gone, err := r.part(s, d, ep.Name, log, func() (spooledDetail, bool, error) {
			b, c, gone, err := r.fetchChild(ctx, s, ep, d.ID)
			return spooledDetail{Batch: b, Child: &c}, gone, err
		})
		if err != nil || gone {
			fd.gone = gone
			return fd, err
		}
		fd.batch.Append(sd.Batch)
		fd.children = append(fd.children, *sd.Child)
	}
	return fd, nil
}

// fetchEntity fetches the detail ep of entity d of s: its rows, a reject
// when it does not decode, missing when it answered 404 while the entity
// has child lists (they are still asked), gone when it answered 404 and
// the entity has none. The detail is read with the entity's stored list
// record as its base (d.Base, see stream.Record.Base): a field the detail
// leaves out keeps the value its list served.
func (r *run) fetchEntity(ctx context.Context, s *stream.Stream, ep stream.Endpoint, d dueDetail, children bool) (spooledDetail, bool, error) {
	id := d.ID
	rec, err := r.client.Detail(ctx, ep.Name, extract.ID(id))
	var recErr *extract.RecordError
	switch {
	case errors.Is(err, extract.ErrNotFound) && !children:
		return spooledDetail{}, true, nil
	case errors.Is(err, extract.ErrNotFound):
		return spooledDetail{Missing: true}, false, nil
	case errors.As(err, &recErr):
		b := transform.Batch{Rejects: transform.RecordErrors(s.Rejects(ep.Name), []extract.RecordError{*recErr})}
		return spooledDetail{Batch: b, Rejected: true}, false, nil
	case err != nil:
		return spooledDetail{}, false, fmt.Errorf("fetch %s %s: %w", ep.Name, id, err)
	}
	return spooledDetail{Batch: r.transform(s, ep.Name, nil, []stream.Record{{Key: rec.Key, Raw: rec.Raw, Base: d.Base}}, "", nil)}, false, nil
}

// fetchChild fetches every page of child list ep of entity id and
// transforms them: the list's verdict, and gone when it answered 404 (the
// entity is deleted).
func (r *run) fetchChild(ctx context.Context, s *stream.Stream, ep stream.Endpoint, id string) (b transform.Batch, c childList, gone bool, err error) {
	c.Endpoint = ep.Name
	var recs []extract.Record
	var rejects []extract.RecordError
	var announced int
	for page, err := range r.client.List(ctx, ep.Name, extract.ListQuery{ID: extract.ID(id)}) {
		if errors.Is(err, extract.ErrNotFound) {
			return b, c, true, nil
		}
		if err != nil {
			return b, c, false, fmt.Errorf("fetch %s of %s: %w", ep.Name, id, err)
		}
		recs = append(recs, page.Records...)
		rejects = append(rejects, page.Rejects...)
		announced = max(announced, page.Total)
		c.End = page.End
	}
	t := s.RecordTable(ep.Name)
	b = r.transform(s, ep.Name, map[string]string{t.ParamColumn().Param: id}, recordsOf(recs), s.Rejects(ep.Name), rejects)
	// The transform keeps one row per record (the last of the same id) and
	// rejects what does not load: rows and rejects are the distinct records
	// the service listed.
	c.Short = b.Len(t.Name)+len(b.Rejects) < announced
	return b, c, false, nil
}

// inFlight is the number of requests the run keeps in flight for the main
// interface, or with comms for the second (date-windowed) one: the setting
// MaxInFlight, else what the client's pace and the answer times measured so
// far call for (extract.Client.InFlight: 1 at the default 10/s with answers
// under 100 ms, so one request at a time). Without a spool it is 1: items
// fetched ahead would wait in memory only, and a crash must not lose more
// than the request in flight and the page in hand.
func (r *run) inFlight(comms bool) int {
	if r.spool == nil {
		return 1
	}
	if n := r.e.set.MaxInFlight; n > 0 {
		return n
	}
	return min(r.client.InFlight(comms), maxDerivedInFlight)
}

// maxDerivedInFlight caps the requests in flight the pace and answer times
// call for (SYNC_MAX_IN_FLIGHT can set more): every request in flight holds
// a database connection for its quota count and its answer in memory, so
// past a few dozen they starve the page commits of connections and hold
// gigabytes. 16 covers 100/s at 100 ms answers.
const maxDerivedInFlight = 16
