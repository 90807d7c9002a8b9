package engine

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/load"
)

// loadPagingMemo is what earlier runs learned of each list's paging
// (paging_state), for the run's client.
func (e *Engine) loadPagingMemo(ctx context.Context) (*extract.PagingMemo, error) {
	stored, err := e.store.PagingFacts(ctx)
	if err != nil {
		return nil, err
	}
	known := make(map[string]extract.PagingFacts, len(stored))
	for k, f := range stored {
		known[k] = extract.PagingFacts{Honoured: f.Honoured, Cursor: f.NamesNext}
	}
	return extract.NewPagingMemo(known), nil
}

// savePaging stores what the run's listings learned since the last call. A
// failure is logged: the next run learns it again.
func (r *run) savePaging(ctx context.Context) {
	if r.memo == nil {
		return
	}
	changed := r.memo.Changed()
	if len(changed) == 0 {
		return
	}
	out := make(map[string]load.PagingFact, len(changed))
	for k, f := range changed {
		out[k] = load.PagingFact{Honoured: f.Honoured, NamesNext: f.Cursor}
	}
	if err := r.e.store.SavePagingFacts(context.WithoutCancel(ctx), out); err != nil {
		r.log.Warn("what the listings showed of the service's paging was not kept; the next run learns it again", zap.Error(err))
	}
}

// pagingAdvice is what to set for endpoint: the paging the answers hinted
// at, else the two causes a listing shows alike (rows that moved while the
// list changed, a paging the server does not honour) and how to tell them.
func pagingAdvice(endpoint, suggest string) string {
	if suggest != "" {
		return fmt.Sprintf("try AGENCY_PAGING=%s=%s (agencysync check confirms the paging convention)", endpoint, suggest)
	}
	return fmt.Sprintf("rows may have moved between its pages if the list changed while it was paged (the next run lists it again); "+
		"if it persists, the server does not page as configured: run agencysync check, which finds the paging convention, and set it with AGENCY_PAGING=%s=…", endpoint)
}

// unproven is why a listing's verdict does not prove it complete ("" when
// it does).
func unproven(end *extract.ListEnd) string {
	switch {
	case end == nil:
		return "its pages ended without a verdict"
	case !end.Proven:
		return end.Reason
	}
	return ""
}

// judgeListing records the verdict of the listing name of endpoint: a
// listing that is not proven complete (why) warns, naming the endpoint and
// the setting to try, and leaves a gap (the run ends partial); so does a
// service that caps its pages without saying so, though its listing, once
// proven, stands.
func (r *run) judgeListing(log *zap.Logger, endpoint, name, why string, end *extract.ListEnd) {
	suggest := ""
	if end != nil {
		suggest = end.Suggest
	}
	if why != "" {
		rows := 0
		if end != nil {
			rows = end.Rows
		}
		log.Warn("listing not proven complete: what it saw landed, nothing was soft-deleted",
			zap.String("list", name), zap.String("endpoint", endpoint), zap.String("reason", why), zap.Int("rows", rows),
			zap.String("paging", r.client.Pagination(endpoint).String()), zap.String("advice", pagingAdvice(endpoint, suggest)))
		r.gap(fmt.Sprintf("%s: listing not proven complete (%s); landed %d rows, soft-deleted nothing; %s",
			name, why, rows, pagingAdvice(endpoint, suggest)))
		return
	}
	if end != nil && end.Cap > 0 {
		asked := r.client.Pagination(endpoint).Max
		log.Warn("the service answers fewer rows a page than asked for, without saying so",
			zap.String("list", name), zap.String("endpoint", endpoint), zap.Int("asked", asked), zap.Int("answered", end.Cap),
			zap.String("advice", "set AGENCY_PAGING="+endpoint+"="+suggest))
		r.gap(fmt.Sprintf("%s: the service answers at most %d rows a page while asked for %d, without saying so (the listing was followed to its end); set AGENCY_PAGING=%s=%s",
			name, end.Cap, asked, endpoint, suggest))
	}
}

// heldDeletions warns of the listings whose unseen rows wait for the next
// listing to agree (load.MarkDeleted): each leaves a gap, so the run ends
// partial until a listing confirms or brings the rows back.
func (r *run) heldDeletions(c load.Counts) {
	for _, h := range c.HeldDeletions {
		r.log.Warn("a listing would soft-delete more than its share of the table; the rows are kept until the next listing agrees",
			zap.String("listing", h.Listing), zap.Int("held", h.Held), zap.Int("live", h.Live), zap.Int("confirmed", h.Confirmed),
			zap.Float64("share", h.Share))
		r.gap(fmt.Sprintf("%s: the listing left out %d of the table's %d live rows, more than SYNC_MASS_DELETE_SHARE (%g%%); "+
			"they are kept, recorded in delete_candidates, and soft-deleted when the next run's listing agrees", h.Listing, h.Held, h.Live, h.Share*100))
	}
}
