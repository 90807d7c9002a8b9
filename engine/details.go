package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// fetchedDetail is one entity's detail, ready to load.
type fetchedDetail struct {
	due   dueDetail
	batch transform.Batch
	gone  bool // 404: deleted since it was listed
	// contacts: the brand's contact list was fetched whole, so contacts
	// absent from it are soft-deleted.
	contacts bool
	// contactsShort: the contact list delivered fewer records than its
	// pages announced, so its absentees must not be soft-deleted.
	contactsShort bool
	// contactsEnd is the verdict of the contact listing (its last page's).
	contactsEnd *extract.ListEnd
	// detailMissing: the brand's detail answered 404 but its contacts did
	// not: the contacts land, the detail is asked again next run.
	detailMissing bool
}

// contactsWhy is why fd's contact listing is not proven complete ("" when
// it is).
func (fd *fetchedDetail) contactsWhy() string {
	if fd.contactsShort {
		return "fewer records than the service announced"
	}
	return unproven(fd.contactsEnd)
}

// contactVerdicts sums up the verdicts of a run's contact listings, so that
// many brands make one warning: the brands whose listing was not proven
// complete, those whose service capped pages silently, and the first
// verdict of each.
type contactVerdicts struct {
	unproven, capped []string // brand ids
	why              string
	whyEnd, capEnd   *extract.ListEnd
}

// add counts the verdict of brand id's contact listing.
func (v *contactVerdicts) add(id string, fd *fetchedDetail) {
	why := fd.contactsWhy()
	switch {
	case why != "":
		if len(v.unproven) == 0 {
			v.why, v.whyEnd = why, fd.contactsEnd
		}
		v.unproven = append(v.unproven, id)
	case fd.contactsEnd != nil && fd.contactsEnd.Cap > 0:
		if len(v.capped) == 0 {
			v.capEnd = fd.contactsEnd
		}
		v.capped = append(v.capped, id)
	}
}

// judge records the summed verdicts (see run.judgeListing).
func (v *contactVerdicts) judge(r *run, log *zap.Logger) {
	ep := stream.EndpointBrandContacts
	if len(v.unproven) > 0 {
		r.judgeListing(log, ep, contactsOf(v.unproven), v.why, v.whyEnd)
	}
	if len(v.capped) > 0 {
		r.judgeListing(log, ep, contactsOf(v.capped), "", v.capEnd)
	}
}

// contactsOf names the contact listings of brands: "contacts of brand 7",
// "contacts of 12 brands (7, 9, 15, …)".
func contactsOf(brands []string) string {
	if len(brands) == 1 {
		return "contacts of brand " + brands[0]
	}
	shown := strings.Join(brands[:min(len(brands), 3)], ", ")
	if len(brands) > 3 {
		shown += ", …"
	}
	return fmt.Sprintf("contacts of %d brands (%s)", len(brands), shown)
}

// details fetches the due details of the selected streams: brands (detail
// and contacts) and projects, stalest first. Fetching the next entities
// (as many as run.inFlight) overlaps loading the current one.
func (r *run) details(ctx context.Context, req Request, log *zap.Logger) error {
	streams := req.Streams
	if len(streams) == 0 {
		streams = AllStreams
	}
	var errs []error
	for _, stream := range []string{StreamBrands, StreamProjects} {
		if !slices.Contains(streams, stream) {
			continue
		}
		err := r.streamDetails(ctx, stream, log.With(zap.String("stream", stream)))
		if err != nil {
			if stopsTask(ctx, err) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *run) streamDetails(ctx context.Context, stream string, log *zap.Logger) error {
	due, err := r.e.book.dueDetails(ctx, r.e.pool, stream, r.e.set.DetailMaxAge, r.e.set.Now())
	if err != nil {
		return err
	}
	log.Info("details due", zap.Int("count", len(due)))
	name := stream + ".details"
	r.progress.Update(name, 0, len(due))
	sp := r.spool
	// fetchOne is item i: from the spool when a killed run left it there,
	// else from the service, spooled as soon as it is in (so that a crash
	// loses only the requests in flight, not the details fetched ahead).
	fetchOne := func(ctx context.Context, i int) (fetchedDetail, error) {
		d := due[i]
		var sd spooledDetail
		if sp != nil && sp.get(sp.detailKey(stream, d.ID, d.Hash), &sd) {
			log.Info("detail from the spool", zap.String("id", d.ID))
			return fetchedDetail{due: d, batch: sd.Batch, contacts: sd.Contacts, contactsShort: sd.ContactsShort, contactsEnd: sd.ContactsEnd}, nil
		}
		fd, err := r.fetchDetail(ctx, stream, d)
		if err == nil && sp != nil && !fd.gone && !fd.detailMissing {
			sp.put(sp.detailKey(stream, d.ID, d.Hash), &spooledDetail{Batch: fd.batch, Contacts: fd.contacts, ContactsShort: fd.contactsShort, ContactsEnd: fd.contactsEnd})
		}
		return fd, err
	}
	var details iter.Seq2[fetchedDetail, error]
	if r.e.set.NoPrefetch {
		details = func(yield func(fetchedDetail, error) bool) {
			for i := range due {
				if fd, err := fetchOne(ctx, i); !yield(fd, err) || err != nil {
					return
				}
			}
		}
	} else {
		// Several details are fetched at once when the pace allows it (see
		// run.inFlight), and committed one by one in order.
		details = fetchOrdered(ctx, func() int { return r.inFlight(false) }, len(due), fetchOne)
	}
	done := 0
	var verdicts contactVerdicts
	defer verdicts.judge(r, log)
	for fd, err := range details {
		if err != nil {
			return err
		}
		if fd.gone {
			log.Info("listed entity not found on detail; its next listing soft-deletes it", zap.String("id", fd.due.ID))
			done++
			continue
		}
		p, err := r.detailPage(stream, &fd, done+1 == len(due), &verdicts, log)
		if err != nil {
			return err
		}
		id, hash := fd.due.ID, fd.due.Hash
		counts, err := r.commit(ctx, p)
		if err != nil {
			return err
		}
		r.heldDeletions(counts)
		if sp != nil {
			sp.drop(sp.detailKey(stream, id, hash))
		}
		done++
		r.progress.Update(name, done, len(due))
		if ctx.Err() != nil {
			return fmt.Errorf("fetch details: %w", ctx.Err())
		}
	}
	return nil
}

// detailPage is the page that commits a fetched detail of stream (last:
// the last one due): its rows, its bookkeeping (fetched, unless the brand's
// detail was missing and only its contacts came) and its contact listing.
func (r *run) detailPage(stream string, fd *fetchedDetail, last bool, verdicts *contactVerdicts, log *zap.Logger) (load.Page, error) {
	p := load.Page{Stream: stream, Batch: fd.batch, State: &load.Checkpoint{Partition: "details", Succeeded: last}}
	id := fd.due.ID
	if fd.detailMissing {
		log.Warn("a listed brand's detail answered 404 while its contacts were served: the contacts are synced, the detail is asked again next run", zap.String("brand_id", id))
		r.note(fmt.Sprintf("brand %s: its detail answered 404 (not found) while it is listed and its contacts are served; contacts synced, detail asked again next run", id))
	} else {
		p.DetailFetched = &load.FetchedDetail{ID: id, Hash: fd.due.Hash, At: r.e.set.Now()}
	}
	if !fd.contacts {
		return p, nil
	}
	return p, r.contactsListing(&p, fd, verdicts, log)
}

// contactsListing makes the page of brand fd's detail end its contact
// listing when the listing is proven complete (its absentees are then
// soft-deleted), and counts its verdict.
func (r *run) contactsListing(p *load.Page, fd *fetchedDetail, verdicts *contactVerdicts, log *zap.Logger) error {
	id := fd.due.ID
	l, err := r.e.store.NewListing("brand_contacts", map[string]any{"brand_id": id})
	if err != nil {
		return err
	}
	why := fd.contactsWhy()
	p.Listing, p.EndsListing = l, why == ""
	if why != "" {
		log.Info("a brand's contact list is not proven complete: none of its contacts is marked deleted",
			zap.String("brand_id", id), zap.String("reason", why))
	}
	verdicts.add(id, fd)
	return nil
}

// fetchDetail fetches one brand (detail and every contact page) or project.
func (r *run) fetchDetail(ctx context.Context, kind string, d dueDetail) (fetchedDetail, error) {
	fd := fetchedDetail{due: d}
	id := extract.ID(d.ID)
	name, endpoint, rejectStream := StreamBrands, stream.EndpointBrand, stream.RejectBrandDetails
	if kind == StreamProjects {
		name, endpoint, rejectStream = StreamProjects, stream.EndpointProject, stream.RejectProjectDetails
	}
	rec, err := r.client.Detail(ctx, endpoint, id)
	// A detail that does not decode is a rejected record, not a failed run:
	// it is fetched again when its list entry changes.
	var recErr *extract.RecordError
	switch {
	case errors.Is(err, extract.ErrNotFound) && kind == StreamProjects:
		fd.gone = true
		return fd, nil
	case errors.Is(err, extract.ErrNotFound):
		fd.detailMissing = true
	case errors.As(err, &recErr):
		fd.batch.Rejects = transform.RecordErrors(rejectStream, []extract.RecordError{*recErr})
		return fd, nil
	case err != nil:
		return fd, fmt.Errorf("fetch %s %s: %w", endpoint, d.ID, err)
	default:
		fd.batch = r.transform(name, endpoint, nil, []stream.Record{{Key: rec.Key, Raw: rec.Raw}}, "", nil)
	}
	if kind == StreamProjects {
		return fd, nil
	}
	cb, short, end, gone, err := r.fetchContacts(ctx, d.ID)
	if err != nil || gone {
		fd.gone = gone
		return fd, err
	}
	fd.contactsShort, fd.contactsEnd = short, end
	fd.batch.Append(cb)
	fd.contacts = true
	return fd, nil
}

// fetchContacts fetches every contact page of brand id and transforms them:
// short says the list delivered fewer records than it announced, end is
// its last page's verdict, gone that it answered 404 (the brand is
// deleted).
func (r *run) fetchContacts(ctx context.Context, id string) (b transform.Batch, short bool, end *extract.ListEnd, gone bool, err error) {
	var contacts []extract.Record
	var rejects []extract.RecordError
	var announced int
	for page, err := range r.client.List(ctx, stream.EndpointBrandContacts, extract.ListQuery{ID: extract.ID(id)}) {
		if errors.Is(err, extract.ErrNotFound) {
			return b, false, nil, true, nil
		}
		if err != nil {
			return b, false, nil, false, fmt.Errorf("fetch contacts of brand %s: %w", id, err)
		}
		contacts = append(contacts, page.Records...)
		rejects = append(rejects, page.Rejects...)
		announced = max(announced, page.Total)
		end = page.End
	}
	b = r.transform(StreamBrands, stream.EndpointBrandContacts, map[string]string{"brand_id": id},
		recordsOf(contacts), stream.RejectBrandContacts, rejects)
	// The transform keeps one row per contact (the last of the same id) and
	// rejects what does not load: rows and rejects are the distinct contacts
	// the service listed.
	return b, b.Len("brand_contacts")+len(b.Rejects) < announced, end, false, nil
}

// inFlight is the number of requests the run keeps in flight for the main
// interface, or with comms for the communications endpoint: the setting
// MaxInFlight, else what the client's pace and the answer times measured so
// far call for (extract.Client.InFlight: 1 at the default 10/s with answers
// under 100 ms, so one request at a time as before). Without a
// spool it is 1: items fetched ahead would wait in memory only, and a crash
// must not lose more than the request in flight and the page in hand.
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
// call for (SYNC_MAX_IN_FLIGHT can set more): every request in flight holds a
// database connection for its quota count and its answer in memory, and at
// a high limit the derived number (up to the limit itself) starved the page
// commits of connections and held gigabytes (a 1 M e-mail first sync at
// AGENCY_RATE_LIMIT=1000 failed with "acquire connection: context deadline
// exceeded" at 3 GiB). 16 covers 100/s at 100 ms answers.
const maxDerivedInFlight = 16

// maxPagesAhead caps the communications pages fetched ahead of the one in
// hand: a page holds up to 1000 e-mails, and the load path, not the fetch,
// is the ceiling of a backfill (7-21 pages/s here), so more pages ahead only
// wait in memory.
const maxPagesAhead = 3
