package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// detailMode is how the test's proxy serves a project detail: as the
// sandbox does, without its team key, or with an empty team.
const (
	teamServed int32 = iota
	teamLeftOut
	teamEmpty
)

// rewriteJSON decodes body (numbers kept as their text), lets edit change
// it and encodes it again; a body that is not an object is left as it is.
func rewriteJSON(body []byte, edit func(map[string]any)) []byte {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return body
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// listedBrands returns the name and account manager of each brand as the
// brand list serves it (the truth's brand lines), by brand id.
func listedBrands(t *testing.T, h *harness) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	for _, l := range h.truth()["brands"] {
		if l.Bad {
			continue
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(l.Record, &rec); err != nil {
			t.Fatal(err)
		}
		if info, ok := rec["brand_info"]; ok {
			rec = nil
			if err := json.Unmarshal(info, &rec); err != nil {
				t.Fatal(err)
			}
		}
		var name, manager string
		_ = json.Unmarshal(rec["name"], &name)
		_ = json.Unmarshal(rec["account_manager"], &manager)
		out[l.Key] = [2]string{strings.TrimSpace(name), strings.TrimSpace(manager)}
	}
	return out
}

// storedBrands returns each live brand's stored name, account manager,
// status and _synced_at, by brand id.
func storedBrands(t *testing.T, h *harness) map[string][4]string {
	t.Helper()
	rows, err := h.pool.Query(context.Background(), "SELECT brand_id, coalesce(name, '<NULL>'), coalesce(account_manager, '<NULL>'), "+
		"coalesce(status, '<NULL>'), _synced_at::text FROM "+h.table("brands")+" WHERE _deleted_at IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][4]string{}
	for rows.Next() {
		var id string
		var v [4]string
		if err := rows.Scan(&id, &v[0], &v[1], &v[2], &v[3]); err != nil {
			t.Fatal(err)
		}
		out[id] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// An entity's detail that leaves out fields its list served (the brand
// detail's brand_info without name and account_manager) does not write
// NULL over the listed values: the warehouse keeps what the list served,
// across runs that fetch the detail again, and an unchanged brand's row is
// not rewritten by the next run. A project detail without its team key
// leaves the stored team members as they are; one with an empty team
// removes them.
func TestDetailLeavingOutListedFieldsKeepsThem(t *testing.T) {
	t.Parallel()
	// A maximum age of a century: only changes fetch details.
	tune := func(s *Settings) { s.DetailMaxAge = 100 * 365 * 24 * time.Hour }
	h := newHarness(t, smallSandbox(), tune)
	tr := h.truth()
	var project string
	var pid int64
	var teamSize int
	for _, l := range tr["projects"] {
		var rec struct {
			Team []json.RawMessage `json:"team"`
		}
		if !l.Bad && json.Unmarshal(l.Record, &rec) == nil && len(rec.Team) > 0 {
			project, pid, teamSize = l.Key, truthID(t, l), len(rec.Team)
			break
		}
	}
	if project == "" {
		t.Fatal("the sandbox has no project with team members")
	}
	var mode atomic.Int32
	var brandDetails, projectDetails atomic.Int32
	h.serveAPI(rewritingProxy(t, h.sb.APIURL(), func(resp *http.Response) bool {
		p := resp.Request.URL.Path
		return resp.StatusCode == http.StatusOK && (strings.HasPrefix(p, "/v1/brands/") && strings.Count(p, "/") == 3 ||
			p == "/v1/projects/"+project)
	}, func(body []byte) []byte {
		return rewriteJSON(body, func(m map[string]any) {
			if info, ok := m["brand_info"].(map[string]any); ok {
				brandDetails.Add(1)
				delete(info, "name")
				delete(info, "account_manager")
				return
			}
			projectDetails.Add(1)
			switch mode.Load() {
			case teamLeftOut:
				delete(m, "team")
			case teamEmpty:
				m["team"] = []any{}
			}
		})
	}))
	h.eng = h.engine(tune) // serveAPI builds it untuned
	team := func() int {
		return h.count("SELECT count(*) FROM "+h.table("project_team_members")+" WHERE project_id = $1", project)
	}
	listed := listedBrands(t, h)
	checkNames := func(run string) map[string][4]string {
		t.Helper()
		stored := storedBrands(t, h)
		if len(stored) != len(listed) {
			t.Errorf("%s: %d brands stored, %d listed", run, len(stored), len(listed))
		}
		for id, want := range listed {
			got := stored[id]
			if want[0] != "" && got[0] != want[0] || want[1] != "" && got[1] != want[1] {
				t.Errorf("%s: brand %s stored name %q, account manager %q; the list served %q, %q", run, id, got[0], got[1], want[0], want[1])
			}
		}
		return stored
	}

	// The values are checked before the runs' status: a warehouse that
	// lost them also warns of empty columns.
	succeeded := func(res *Result, what string) {
		t.Helper()
		if res.Status != StatusSucceeded {
			t.Errorf("%s: %s %v (%s)", what, res.Status, res.Err, res.WarningSummary())
		}
	}
	res := h.run(Request{})
	if brandDetails.Load() == 0 {
		t.Fatal("no brand detail was rewritten: the test shows nothing")
	}
	first := checkNames("first run")
	if n := team(); n != teamSize {
		t.Fatalf("project %s: %d team members stored, the truth has %d", project, n, teamSize)
	}
	succeeded(res, "first run")

	// Nothing changed: no brand row is rewritten.
	res = h.run(Request{})
	for id, v := range checkNames("unchanged run") {
		if v[3] != first[id][3] {
			t.Errorf("unchanged run: brand %s rewritten (_synced_at %s → %s)", id, first[id][3], v[3])
		}
	}
	succeeded(res, "unchanged run")
	if t.Failed() {
		return
	}

	// A brand's status and a project's status change: their details are
	// fetched again, the brand's still without name, the project's without
	// its team key.
	brand := truthID(t, tr["brands"][1])
	status := "Suspendat"
	if err := h.sb.EditBrand(brand, sandbox.BrandEdit{Status: &status}); err != nil {
		t.Fatal(err)
	}
	projStatus := "finalizat"
	if err := h.sb.EditProject(pid, sandbox.ProjectEdit{Status: &projStatus}); err != nil {
		t.Fatal(err)
	}
	mode.Store(teamLeftOut)
	brandsBefore, projectsBefore := brandDetails.Load(), projectDetails.Load()
	h.mustSucceed(Request{}, "run after the edits")
	if brandDetails.Load() != brandsBefore+1 || projectDetails.Load() != projectsBefore+1 {
		t.Fatalf("the edits fetched %d brand and %d project details, want 1 and 1",
			brandDetails.Load()-brandsBefore, projectDetails.Load()-projectsBefore)
	}
	if got := checkNames("run after the edits")[fmt.Sprint(brand)]; got[2] != status {
		t.Errorf("brand %d: status %q, want the edited %q", brand, got[2], status)
	}
	if n := h.count("SELECT count(*) FROM "+h.table("projects")+" WHERE project_id = $1 AND status = $2", project, projStatus); n != 1 {
		t.Errorf("project %s: the detail's status was not stored", project)
	}
	if n := team(); n != teamSize {
		t.Errorf("project %s: %d team members after a detail without its team key, want the %d stored", project, n, teamSize)
	}

	// A rebuild re-derives the rows from raw and detail_raw as the sync
	// did: the names and the team members stay, and no brand row changes.
	before := storedBrands(t, h)
	rb, err := h.eng.Rebuild(context.Background(), RebuildRequest{Streams: []string{"brands", "projects"}})
	if err != nil || rb.Status != StatusSucceeded {
		t.Fatalf("rebuild: %v %+v", err, rb)
	}
	for id, v := range checkNames("rebuild") {
		if v != before[id] {
			t.Errorf("rebuild: brand %s rewritten (%q → %q)", id, before[id], v)
		}
	}
	if n := team(); n != teamSize {
		t.Errorf("project %s: %d team members after the rebuild, want the %d stored", project, n, teamSize)
	}

	// An empty team is the detail's word: the members are removed.
	projStatus = "in_progres"
	if err := h.sb.EditProject(pid, sandbox.ProjectEdit{Status: &projStatus}); err != nil {
		t.Fatal(err)
	}
	mode.Store(teamEmpty)
	h.mustSucceed(Request{}, "run with an empty team")
	if n := team(); n != 0 {
		t.Errorf("project %s: %d team members after a detail with an empty team, want none", project, n)
	}
}
