package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agencysync/agencysync/progress"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// TestFieldMapChangeFetchesNoDetail: after a first sync, a run under a new
// field map sends no detail request — neither a no-op map nor one that
// fills columns the previous map left NULL (the renamed project fields):
// a field map decides how records are read, not whether the service's
// entities changed. The plan before the run says 0 details due, and the
// run agrees. The stored rows under the new map are re-derived from raw
// with no request: the projects' names are filled.
func TestFieldMapChangeFetchesNoDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, variant, fieldMap string
	}{
		{"no-op map", "", "projects.name=name"},
		{"renamed fields mapped", sandbox.VariantRenamedFields, renamedEverywhere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := smallSandbox()
			o.Emails, o.HistoryDays = 300, 20
			if tc.variant != "" {
				o.Variants = []string{tc.variant}
			}
			// A maximum age of a century: no day is a staggered refresh day.
			century := func(s *Settings) { s.DetailMaxAge = 100 * 365 * 24 * time.Hour }
			h := newHarness(t, o, century)
			if res := h.run(Request{}); res.Status == StatusFailed || res.Status == StatusPartial {
				t.Fatalf("first run: %s %v", res.Status, res.Err)
			}
			if b, c, p := h.detailRequests(); b == 0 || c == 0 || p == 0 {
				t.Fatalf("the first run fetched %d brand details, %d contact lists, %d project details", b, c, p)
			}
			h.eng = h.engine(func(s *Settings) { century(s); s.Streams = mappedStreams(t, tc.fieldMap) })
			live := progress.NewLive()
			h.eng.live = live
			plan, err := h.eng.Plan(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range plan.Items {
				if it.Task == TaskDetails && it.Requests != 0 {
					t.Errorf("plan under the new map: %d detail requests (%s), want 0", it.Requests, it.Note)
				}
			}
			var rederive []string
			for _, rd := range plan.Rederive {
				rederive = append(rederive, rd.Table)
			}
			if want := map[bool][]string{false: nil, true: {"brand_contacts", "projects", "invoices"}}[tc.variant != ""]; !slices.Equal(rederive, want) {
				t.Errorf("plan: re-derives %v, want %v", rederive, want)
			}
			h.sb.ResetStats()
			res := h.run(Request{})
			if res.Status == StatusFailed || res.Status == StatusPartial {
				t.Fatalf("run under the new map: %s %v", res.Status, res.Err)
			}
			if b, c, p := h.detailRequests(); b+c+p != 0 {
				t.Errorf("run under the new map fetched %d brand details, %d contact lists, %d project details; want none", b, c, p)
			}
			if d := res.Tasks[string(TaskDetails)]; d.Requests != 0 {
				t.Errorf("details task spent %d requests", d.Requests)
			}
			if n := h.count("SELECT count(*) FROM " + h.table("projects") + " WHERE name IS NULL"); n != 0 {
				t.Errorf("%d projects without name under the new map", n)
			}
			// The live progress followed the run to its end; a rebuild too.
			if snap := live.Snapshot(); snap.Running || snap.LastRunID != res.RunID {
				t.Errorf("live progress after the run: %+v, want the run %s ended", snap, res.RunID)
			}
			if plan, err := h.eng.Plan(context.Background(), nil); err != nil || len(plan.Rederive) != 0 {
				t.Errorf("plan after the run: re-derives %+v (%v), want nothing", plan.Rederive, err)
			}
			rebuilds := h.count("SELECT count(*) FROM " + h.table("sync_runs") + " WHERE trigger = 'rebuild' AND status = 'succeeded' AND requests_used = 0")
			if want := map[bool]int{false: 0, true: 1}[tc.variant != ""]; rebuilds != want {
				t.Errorf("%d rebuilds recorded, want %d", rebuilds, want)
			}
			rb, err := h.eng.Rebuild(context.Background(), RebuildRequest{Streams: []string{"projects"}})
			if err != nil || rb.Status != StatusSucceeded {
				t.Fatalf("rebuild: %v %+v", err, rb)
			}
			if snap := live.Snapshot(); snap.Running || snap.LastRunID != rb.RunID {
				t.Errorf("live progress after the rebuild: %+v, want the rebuild %s ended", snap, rb.RunID)
			}
		})
	}
}
