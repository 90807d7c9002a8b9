package engine

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestFreshnessAgreesEverywhere: after a run that had no detail to fetch
// (the details partition last succeeded an hour ago), `status --json`, the
// sync_freshness view and the /metrics gauge give the same last success (to
// the second) and the same lag (within the second between the reads), and
// that last success is the run that just ended, not the old details.
func TestFreshnessAgreesEverywhere(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	ctx := context.Background()
	h.mustSucceed(Request{}, "first run")
	// The details were fetched an hour ago; the next run finds none due.
	if _, err := h.pool.Exec(ctx, "UPDATE "+h.table("sync_state")+" SET last_success_at = last_success_at - interval '1 hour' WHERE partition = 'details'"); err != nil {
		t.Fatal(err)
	}
	second := h.run(Request{})
	if second.Status != StatusSucceeded {
		t.Fatalf("second run %s: %v", second.Status, second.Err)
	}
	var secondStart time.Time
	if err := h.pool.QueryRow(ctx, "SELECT started_at FROM "+h.table("sync_runs")+" WHERE run_id = $1::uuid", second.RunID).Scan(&secondStart); err != nil {
		t.Fatal(err)
	}

	rep, err := h.eng.Status(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep) // what status --json prints
	if err != nil {
		t.Fatal(err)
	}
	var printed struct {
		Streams []struct {
			Stream      string     `json:"stream"`
			LastSuccess *time.Time `json:"last_success"`
			LagSeconds  *float64   `json:"lag_seconds"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(b, &printed); err != nil {
		t.Fatal(err)
	}
	type viewRow struct {
		last time.Time
		lag  float64
	}
	view := map[string]viewRow{}
	rows, err := h.pool.Query(ctx, "SELECT stream, last_success_at, extract(epoch FROM lag)::float8 FROM "+h.table("sync_freshness"))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		var v viewRow
		if err := rows.Scan(&s, &v.last, &v.lag); err != nil {
			t.Fatal(err)
		}
		view[s] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(printed.Streams) != len(AllStreams) {
		t.Fatalf("status lists %d streams", len(printed.Streams))
	}
	for _, s := range printed.Streams {
		v, ok := view[s.Stream]
		if !ok || s.LastSuccess == nil || s.LagSeconds == nil {
			t.Errorf("%s: status last success %v lag %v, view has it: %v", s.Stream, s.LastSuccess, s.LagSeconds, ok)
			continue
		}
		if s.LastSuccess.Unix() != v.last.Unix() {
			t.Errorf("%s: status last success %s, sync_freshness %s", s.Stream, s.LastSuccess.UTC(), v.last.UTC())
		}
		if math.Abs(*s.LagSeconds-v.lag) > 1 {
			t.Errorf("%s: status lag %.0f s, sync_freshness %.3f s", s.Stream, *s.LagSeconds, v.lag)
		}
		if s.LastSuccess.Before(secondStart) {
			t.Errorf("%s: last success %s is before the run that just succeeded (started %s)", s.Stream, s.LastSuccess.UTC(), secondStart.UTC())
		}
		var m dto.Metric
		if err := h.eng.metrics.LastSuccess.WithLabelValues(s.Stream).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := int64(math.Floor(m.GetGauge().GetValue())); got != v.last.Unix() {
			t.Errorf("%s: /metrics last success %d, sync_freshness %d", s.Stream, got, v.last.Unix())
		}
	}
}

// TestRunHistoryHasStreamsDetail: sync_runs.streams_detail holds, per task,
// the requests spent (adding up to requests_used), the records read (the
// e-mails for the communications tasks) and the ranges fetched; status
// shows it.
func TestRunHistoryHasStreamsDetail(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	ctx := context.Background()
	res := h.run(Request{})
	if res.Status != StatusSucceeded {
		t.Fatalf("run %s: %v", res.Status, res.Err)
	}
	var raw []byte
	var used int
	if err := h.pool.QueryRow(ctx, "SELECT streams_detail, requests_used FROM "+h.table("sync_runs")+" WHERE run_id = $1::uuid", res.RunID).Scan(&raw, &used); err != nil {
		t.Fatal(err)
	}
	type rng struct {
		From, To string
		Pages    int
		Records  int64
		Complete bool
	}
	var detail map[string]struct {
		Stream          string  `json:"stream"`
		Requests        int     `json:"requests"`
		RecordsRead     int64   `json:"records_read"`
		DurationSeconds float64 `json:"duration_seconds"`
		Ranges          []rng   `json:"ranges"`
	}
	if err := json.Unmarshal(raw, &detail); err != nil {
		t.Fatalf("streams_detail %s: %v", raw, err)
	}
	sum := 0
	var commsRead, rangeRecords int64
	for task, d := range detail {
		sum += d.Requests
		if d.DurationSeconds < 0 || d.Stream != h.eng.taskStream(Task(task)) {
			t.Errorf("%s: %+v", task, d)
		}
		if h.eng.taskStream(Task(task)) == "communications" {
			commsRead += d.RecordsRead
			for _, r := range d.Ranges {
				rangeRecords += r.Records
				if r.Pages == 0 || r.From == "" || r.To < r.From {
					t.Errorf("%s: range %+v", task, r)
				}
			}
		}
	}
	if sum != used {
		t.Errorf("requests per task add up to %d, the run used %d (%s)", sum, used, raw)
	}
	emails := h.count("SELECT count(*) FROM " + h.table("emails"))
	if commsRead < int64(emails) || rangeRecords != commsRead {
		t.Errorf("communications: %d records read, %d in ranges, %d e-mails stored", commsRead, rangeRecords, emails)
	}
	bf, ok := detail[string(TaskCommsBackfill)]
	if !ok || len(bf.Ranges) == 0 || !bf.Ranges[len(bf.Ranges)-1].Complete {
		t.Errorf("backfill detail %+v", bf)
	}
	if d := detail[string(Task("brands"))]; d.RecordsRead != int64(h.count("SELECT count(*) FROM "+h.table("brands"))) || d.Requests == 0 {
		t.Errorf("brands detail %+v", d)
	}

	rep, err := h.eng.Status(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var printed struct {
		Runs []struct {
			StreamsDetail map[string]struct {
				Requests int `json:"requests"`
			} `json:"streams_detail"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &printed); err != nil {
		t.Fatal(err)
	}
	if len(printed.Runs) != 1 || len(printed.Runs[0].StreamsDetail) != len(detail) {
		t.Errorf("status --json runs: %s", b)
	}
	if d, ok := rep.Runs[0].StreamsDetail[string(TaskCommsBackfill)]; !ok || d.RecordsRead == 0 {
		t.Errorf("status report lacks the last run's %s task: %+v", TaskCommsBackfill, rep.Runs[0].StreamsDetail)
	}
}

// TestPlanMatchesRun: on a first sync and after a partial one, what `plan`
// allots each task is what the run then spends: no task the plan leaves
// for tomorrow spends today, an open-ended task stays within its "up to",
// and a task of known size spends what was allotted.
func TestPlanMatchesRun(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	o.Emails = 9000
	quota := 10000
	h := newHarness(t, o, func(s *Settings) { s.DailyQuota = quota; s.QuotaReserve = 0 })
	ctx := context.Background()
	check := func(name string) *Result {
		t.Helper()
		p, err := h.eng.Plan(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		p.Print(&out)
		if strings.Contains(out.String(), "after ;") {
			t.Errorf("%s: the plan names no day:\n%s", name, out.String())
		}
		res := h.run(Request{})
		spent := map[Task]int{}
		var raw []byte
		if err := h.pool.QueryRow(ctx, "SELECT streams_detail FROM "+h.table("sync_runs")+" WHERE run_id = $1::uuid", res.RunID).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var detail map[string]struct {
			Requests int `json:"requests"`
		}
		if err := json.Unmarshal(raw, &detail); err != nil {
			t.Fatal(err)
		}
		for task, d := range detail {
			spent[Task(task)] = d.Requests
		}
		for _, it := range p.Items {
			got := spent[it.Task]
			switch {
			case it.Unknown && got > it.UpTo:
				t.Errorf("%s: %s spent %d, the plan said up to %d", name, it.Task, got, it.UpTo)
			case !it.Unknown && it.After == "" && got != it.Allotted:
				t.Errorf("%s: %s spent %d, the plan allotted %d", name, it.Task, got, it.Allotted)
			case it.UpTo == 0 && got > 0:
				t.Errorf("%s: %s spent %d, the plan left it for tomorrow", name, it.Task, got)
			}
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("%s plan:\n%s\nspent %v", name, out.String(), spent)
		}
		return res
	}
	// A first sync within the day's budget does everything, the backfill
	// included.
	if res := check("first sync"); res.Status != StatusSucceeded {
		t.Fatalf("first sync %s: %v", res.Status, res.Err)
	}

	// A partial first sync, then the next day's plan and run.
	o2 := smallSandbox()
	o2.Emails = 9000
	quota = 20
	h = newHarness(t, o2, func(s *Settings) { s.DailyQuota = quota; s.QuotaReserve = 0 })
	if res := check("partial first sync"); res.Status != StatusPartial {
		t.Fatalf("partial first sync %s: %v", res.Status, res.Err)
	}
	for day := 1; day <= 6; day++ {
		h.advance(24 * time.Hour)
		if res := check("day after a partial sync"); res.Status == StatusSucceeded {
			return
		}
	}
	t.Fatal("not complete after six more days")
}
