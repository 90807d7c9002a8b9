package serve

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/enginetest"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/inventory"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
)

// chromiumFlags are the flags of every headless Chromium the tests start.
func TestMain(m *testing.M) { warehousetest.Main(m) }

var chromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync"}

var chromiumOnce struct {
	sync.Once
	path string
	err  error
}

// chromium returns Debian's chromium, installing it with apt-get when it is
// missing and the test runs as root; otherwise the test fails (never skips).
func chromium(t *testing.T) string {
	t.Helper()
	chromiumOnce.Do(func() {
		if p, err := exec.LookPath("chromium"); err == nil {
			chromiumOnce.path = p
			return
		}
		if os.Geteuid() != 0 {
			chromiumOnce.err = errors.New("chromium is not installed and this test is not root: install Debian's chromium (apt-get install -y chromium; .ci/run does it)")
			return
		}
		for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "chromium"}} {
			cmd := exec.Command("apt-get", args...)
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if out, err := cmd.CombinedOutput(); err != nil {
				chromiumOnce.err = fmt.Errorf("install chromium: apt-get %s: %w\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
		chromiumOnce.path, chromiumOnce.err = exec.LookPath("chromium")
	})
	if chromiumOnce.err != nil {
		t.Fatal(chromiumOnce.err)
	}
	return chromiumOnce.path
}

// runChromium runs headless Chromium with a private profile and returns its stdout.
func runChromium(t *testing.T, args ...string) []byte {
	t.Helper()
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append(slices.Clone(chromiumFlags), "--user-data-dir="+chromiumProfile(t))
	cmd := exec.CommandContext(ctx, bin, append(all, args...)...)
	inOwnGroup(cmd)
	cmd.Cancel = func() error { killGroup(cmd); return nil }
	defer killGroup(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// domNode is an element of the dumped DOM.
type domNode struct {
	name     string
	attrs    map[string]string
	text     strings.Builder
	children []*domNode
}

// parseDOM parses Chromium's serialised DOM with encoding/xml in HTML mode.
func parseDOM(t *testing.T, b []byte) *domNode {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	root := &domNode{name: "#root"}
	stack := []*domNode{root}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse the DOM: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &domNode{name: strings.ToLower(tok.Name.Local), attrs: map[string]string{}}
			for _, a := range tok.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.children = append(top.children, n)
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			for _, n := range stack {
				n.text.Write(tok)
			}
		}
	}
	return root
}

func (n *domNode) all(match func(*domNode) bool) []*domNode {
	var out []*domNode
	for _, c := range n.children {
		if match(c) {
			out = append(out, c)
		}
		out = append(out, c.all(match)...)
	}
	return out
}

func (n *domNode) withAttr(name, value string) []*domNode {
	return n.all(func(c *domNode) bool { v, ok := c.attrs[name]; return ok && (value == "" || v == value) })
}

// field returns the trimmed text of the one descendant with data-field=name.
func (n *domNode) field(t *testing.T, name string) string {
	t.Helper()
	got := n.withAttr("data-field", name)
	if len(got) != 1 {
		t.Fatalf("%d elements with data-field=%q under <%s %v>, want 1", len(got), name, n.name, n.attrs)
	}
	return strings.TrimSpace(got[0].text.String())
}

func (n *domNode) fieldInt(t *testing.T, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(n.field(t, name), 10, 64)
	if err != nil {
		t.Fatalf("data-field=%q: %v", name, err)
	}
	return v
}

// TestStatusPageInChromium serves the page of a warehouse with known runs,
// quota history and rejects, loads it in headless Chromium, checks every
// number shown against the warehouse (read with the test's own SQL) and takes
// a screenshot.
func TestStatusPageInChromium(t *testing.T) {
	t.Parallel()
	chromium(t) // fail early, before the warehouse work, when it cannot be had
	o := enginetest.SmallSandbox()
	o.Emails, o.HistoryDays = 300, 20
	h := enginetest.New(t, o)
	h.RealClock = true // quota days follow current_date
	h.Engine()
	ctx := context.Background()
	if res, err := h.Eng.Run(ctx, engine.Request{Trigger: engine.TriggerTest}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("first run: %v %+v", err, res)
	}
	tbl := func(name string) string { return h.Schema + "." + name }
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := h.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Two more runs: one failed, one partial with two warnings.
	store, err := load.New(h.Pool, load.Config{Schema: h.Schema})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := store.StartRun(ctx, load.Run{Trigger: "test", Streams: []string{"brands"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.FinishRun(ctx, failed, load.RunResult{Status: load.RunFailed, RequestsUsed: 4, Rejected: 2,
		Error: "brands: list brands: HTTP 500 <script>alert(1)</script>"}); err != nil {
		t.Fatal(err)
	}
	partial, err := store.StartRun(ctx, load.Run{Trigger: "serve", Streams: []string{"communications"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.FinishRun(ctx, partial, load.RunResult{Status: load.RunPartial, RequestsUsed: 17,
		RowsByTable: map[string]int64{"emails": 11, "email_recipients": 20},
		Error:       "today's request budget is spent; the next run continues; notes: communications 2026-01-01..2026-01-31: 5 of 7 records delivered (shortfall 2); second warning"}); err != nil {
		t.Fatal(err)
	}
	// Two rejects of brands and requests on earlier quota days, one outside the chart.
	exec(`INSERT INTO ` + tbl("rejected_records") + ` (stream, record_key, payload, error) VALUES ('brands', 'b1', '{}', 'bad'), ('finance.invoices', 'i1', '{}', 'bad')`)
	exec(`INSERT INTO ` + tbl("api_quota_usage") + ` (day, requests) VALUES (current_date - 3, 120), (current_date - 10, 45), (current_date - 29, 9), (current_date - 30, 999)`)

	// serve's mux with the page mounted at /, as serve builds it.
	page := NewStatusPage(h.Eng, StatusPageOptions{Schedules: []Schedule{{Spec: "0 2 * * *", Streams: engine.AllStreams}}})
	srv := httptest.NewServer(healthMux(Options{StatusPage: page}))
	t.Cleanup(srv.Close)

	// The page itself: self-contained, no external assets.
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %s %q\n%s", resp.Status, resp.Header.Get("Content-Type"), raw)
	}
	// Nothing external: the one script is the page's own, every other
	// asset is inline.
	for _, external := range []string{"@import", "url(", "<link", "http://", "https://"} {
		if bytes.Contains(bytes.ToLower(raw), []byte(external)) && !(external == "http://" && bytes.Contains(raw, []byte(`xmlns="http://www.w3.org/2000/svg"`))) {
			t.Errorf("the page contains %q: it must work offline", external)
		}
	}
	if refs := regexp.MustCompile(`(?i)\b(?:src|href)="([^"]*)"`).FindAllStringSubmatch(string(raw), -1); len(refs) != 1 || refs[0][1] != "/status.js" {
		t.Errorf("the page refers to %q, want only its own /status.js", refs)
	}
	if n := bytes.Count(bytes.ToLower(raw), []byte("<script")); n != 1 {
		t.Errorf("%d scripts, want the page's one", n)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") ||
		strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'unsafe-inline'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if r2, err := http.Get(srv.URL + "/nope"); err != nil || r2.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %v %v, want 404", r2.Status, err)
	}

	dom := parseDOM(t, runChromium(t, "--dump-dom", srv.URL+"/"))

	// The next scheduled run: 02:00 UTC, today's or tomorrow's.
	if next := dom.withAttr("data-field", "next-at"); len(next) != 1 || !strings.HasSuffix(strings.TrimSpace(next[0].text.String()), "02:00 UTC") {
		t.Errorf("next scheduled run: %v, want a 02:00 UTC", next)
	}

	// Streams: rows, rejects and last success against the warehouse.
	rows := dom.withAttr("data-stream", "")
	if len(rows) != len(engine.AllStreams) {
		t.Fatalf("%d stream rows, want %d", len(rows), len(engine.AllStreams))
	}
	for _, r := range rows {
		s := r.attrs["data-stream"]
		decl, ok := stream.Lookup(s)
		if !ok {
			t.Fatalf("stream row %q is no declared stream", s)
		}
		var want, rejected int64
		var last time.Time
		if err := h.Pool.QueryRow(ctx, "SELECT count(*) FROM "+tbl(decl.Main)+" WHERE _deleted_at IS NULL").Scan(&want); err != nil {
			t.Fatal(err)
		}
		if err := h.Pool.QueryRow(ctx, "SELECT count(*) FROM "+tbl("rejected_records")+" WHERE split_part(stream, '.', 1) = $1", s).Scan(&rejected); err != nil {
			t.Fatal(err)
		}
		if err := h.Pool.QueryRow(ctx, "SELECT min(last_success_at) FROM "+tbl("sync_state")+" WHERE stream = $1", s).Scan(&last); err != nil {
			t.Fatal(err)
		}
		if got := r.fieldInt(t, "rows"); got != want || want == 0 {
			t.Errorf("%s: page shows %d rows, warehouse has %d", s, got, want)
		}
		if got := r.fieldInt(t, "rejected"); got != rejected {
			t.Errorf("%s: page shows %d rejected, warehouse has %d", s, got, rejected)
		}
		if got := r.field(t, "last-success"); got != last.UTC().Format("2006-01-02 15:04:05") {
			t.Errorf("%s: last success %q, warehouse %s", s, got, last.UTC())
		}
		if got := r.field(t, "state"); got != "fresh" {
			t.Errorf("%s: state %q, want fresh", s, got)
		}
	}

	// Today's quota.
	var spentToday int64
	if err := h.Pool.QueryRow(ctx, "SELECT coalesce((SELECT requests FROM "+tbl("api_quota_usage")+" WHERE day = current_date), 0)").Scan(&spentToday); err != nil {
		t.Fatal(err)
	}
	quotas := dom.withAttr("id", "quota")
	if len(quotas) != 1 {
		t.Fatalf("%d quota cards", len(quotas))
	}
	q := quotas[0]
	wantLeft := max(10000-int64(math.Ceil(10000*0.05))-spentToday, 0) // harness: quota 10000, reserve 5 %
	if got := q.fieldInt(t, "spent"); got != spentToday || got == 0 {
		t.Errorf("quota spent %d, warehouse %d", got, spentToday)
	}
	if got := q.fieldInt(t, "left"); got != wantLeft {
		t.Errorf("quota left %d, want %d", got, wantLeft)
	}

	// The chart: 30 days ending today, one bar per day with the warehouse's count.
	perDay := warehousetest.Counts[int64](t, h.Pool, "SELECT to_char(day, 'YYYY-MM-DD'), requests FROM "+tbl("api_quota_usage")+" WHERE day > current_date - 30")
	var total int64
	for _, n := range perDay {
		total += n
	}
	var today string
	if err := h.Pool.QueryRow(ctx, "SELECT to_char(current_date, 'YYYY-MM-DD')").Scan(&today); err != nil {
		t.Fatal(err)
	}
	bars := dom.withAttr("data-requests", "")
	if len(bars) != 30 {
		t.Fatalf("%d bars, want 30", len(bars))
	}
	if bars[29].attrs["data-day"] != today {
		t.Errorf("last bar is %s, want today %s", bars[29].attrs["data-day"], today)
	}
	var shown, tallest int64
	var heights []float64
	for _, b := range bars {
		n, _ := strconv.ParseInt(b.attrs["data-requests"], 10, 64)
		if n != perDay[b.attrs["data-day"]] {
			t.Errorf("bar %s: %d requests, warehouse %d", b.attrs["data-day"], n, perDay[b.attrs["data-day"]])
		}
		shown += n
		tallest = max(tallest, n)
		hgt, _ := strconv.ParseFloat(b.attrs["height"], 64)
		heights = append(heights, hgt)
	}
	if shown != total || total != spentToday+120+45+9 {
		t.Errorf("bars add up to %d, warehouse %d (today %d + 174)", shown, total, spentToday)
	}
	// Heights are proportional to the counts.
	for i, b := range bars {
		n, _ := strconv.ParseInt(b.attrs["data-requests"], 10, 64)
		if n == 0 && heights[i] != 0 {
			t.Errorf("bar %s: height %v for 0 requests", b.attrs["data-day"], heights[i])
		}
		if n == tallest && i > 0 && heights[i] < slices.Max(heights) {
			t.Errorf("the busiest day is not the tallest bar")
		}
	}
	if got := dom.withAttr("id", "requests-total"); len(got) != 1 || got[0].attrs["data-total"] != fmt.Sprint(total) {
		t.Errorf("requests total card: %v, want %d", got, total)
	}

	// The runs, newest first, against sync_runs.
	type runRow struct {
		id, status, errText string
		requests, rejected  int64
	}
	var want []runRow
	rs, err := h.Pool.Query(ctx, "SELECT run_id::text, status, requests_used, rejected, coalesce(error, '') FROM "+tbl("sync_runs")+" ORDER BY started_at DESC")
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var r runRow
		if err := rs.Scan(&r.id, &r.status, &r.requests, &r.rejected, &r.errText); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	runRows := dom.withAttr("data-run", "")
	if len(runRows) != len(want) || len(want) != 3 {
		t.Fatalf("%d runs on the page, %d in the warehouse, want 3", len(runRows), len(want))
	}
	for i, r := range runRows {
		w := want[i]
		if r.attrs["data-run"] != w.id || r.field(t, "status") != w.status || r.fieldInt(t, "requests") != w.requests || r.fieldInt(t, "rejected") != w.rejected {
			t.Errorf("run %d: page %v %s %d %d, warehouse %+v", i, r.attrs["data-run"], r.field(t, "status"), r.fieldInt(t, "requests"), r.fieldInt(t, "rejected"), w)
		}
	}
	var warnings []string
	for _, w := range runRows[0].withAttr("data-field", "warning") {
		warnings = append(warnings, strings.TrimSpace(w.text.String()))
	}
	if runRows[0].attrs["data-run"] != partial || !slices.Equal(warnings, []string{"communications 2026-01-01..2026-01-31: 5 of 7 records delivered (shortfall 2)", "second warning"}) {
		t.Errorf("partial run's warnings %q", warnings)
	}
	if got := runRows[0].field(t, "error"); got != "today's request budget is spent; the next run continues" {
		t.Errorf("partial run's error %q", got)
	}
	if got := runRows[1].field(t, "error"); got != "brands: list brands: HTTP 500 <script>alert(1)</script>" {
		t.Errorf("failed run's error %q (escaped as text, not markup)", got)
	}
	if n := len(runRows[2].withAttr("data-field", "warning")); n != 0 {
		t.Errorf("the clean run shows %d warnings", n)
	}
	if got := dom.withAttr("id", "overall"); len(got) != 1 || got[0].attrs["data-overall"] != "warn" {
		t.Errorf("overall state %v, want warn (last run partial)", got)
	}

	// A screenshot: a non-empty PNG of the requested size.
	shot := filepath.Join(t.TempDir(), "status.png")
	runChromium(t, "--hide-scrollbars", "--screenshot="+shot, "--window-size=1200,900", srv.URL+"/")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 900 {
		t.Errorf("screenshot is %v, want 1200x900", b)
	}
	// Not a blank page: the bars' blue must be in it.
	blue := 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 3 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			if b>>8 > 180 && r>>8 < 120 && g>>8 < 160 {
				blue++
			}
		}
	}
	if blue == 0 {
		t.Error("the screenshot has no chart bar colour: blank page?")
	}
	if dir := os.Getenv("AGENCYSYNC_SCREENSHOT_DIR"); dir != "" {
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(filepath.Join(dir, "statuspage.png"), b, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "statuspage.html"), raw, 0o644)
	}
}

func TestSplitRunNotes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, err  string
		warnings []string
	}{
		{"", "", nil},
		{"boom", "boom", nil},
		{"notes: a; b", "", []string{"a", "b"}},
		{"stopped: x; y; notes: shortfall 2", "stopped: x; y", []string{"shortfall 2"}},
	} {
		e, w := SplitRunNotes(c.in)
		if e != c.err || !slices.Equal(w, c.warnings) {
			t.Errorf("SplitRunNotes(%q) = %q %q, want %q %q", c.in, e, w, c.err, c.warnings)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	t.Parallel()
	for n := 0; n < 200000; n += 1 + n/50 {
		top := niceCeil(n)
		if top < n || top%chartGridLines != 0 || (n > 8 && top > 3*n) {
			t.Fatalf("niceCeil(%d) = %d", n, top)
		}
	}
}

// fakeStatus is a StatusSource with a fixed report.
type fakeStatus struct {
	rep  *engine.StatusReport
	hist []load.DayRequests
	err  error
}

func (f *fakeStatus) Status(context.Context, int) (*engine.StatusReport, error) { return f.rep, f.err }
func (f *fakeStatus) RequestHistory(context.Context, int) ([]load.DayRequests, error) {
	return f.hist, f.err
}
func (f *fakeStatus) DailyQuota() int { return 100 }

// TestStatusPageStates: the stream states and the page's answers when the
// warehouse cannot be read.
func TestStatusPageStates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) (*time.Time, *float64) {
		ts := now.Add(-d)
		lag := d.Seconds()
		return &ts, &lag
	}
	fresh, freshLag := at(time.Hour)
	old, oldLag := at(30 * time.Hour)
	src := &fakeStatus{rep: &engine.StatusReport{Schema: "agency", QuotaDay: "2026-05-10", QuotaSpent: 120, Streams: []engine.StreamStatus{
		{Stream: "brands", LastSuccess: fresh, LagSeconds: freshLag},
		{Stream: "projects", LastSuccess: old, LagSeconds: oldLag},
		{Stream: "finance"},
		{Stream: "communications", LastSuccess: fresh, LagSeconds: freshLag, InProgress: true},
	}}, hist: []load.DayRequests{{Day: now.Truncate(24 * time.Hour), Requests: 120}}}
	srv := httptest.NewServer(NewStatusPage(src, StatusPageOptions{Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)
	get := func() (int, string) {
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get()
	if code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, body)
	}
	for stream, state := range map[string]string{"brands": "fresh", "projects": "stale", "finance": "never synced", "communications": "resumes next run"} {
		re := `data-stream="` + stream + `"`
		i := strings.Index(body, re)
		if i < 0 {
			t.Fatalf("no row for %s", stream)
		}
		if j := strings.Index(body[i:], `data-field="state">`); j < 0 || !strings.HasPrefix(body[i+j+len(`data-field="state">`):], state+"<") {
			t.Errorf("%s: state is not %q", stream, state)
		}
	}
	if !strings.Contains(body, `data-overall="bad"`) {
		t.Error("a stale stream does not make the page say attention")
	}
	// Over the quota: the bar is still drawn, within the chart.
	if !strings.Contains(body, `data-requests="120"`) || !strings.Contains(body, `class="quota"`) {
		t.Error("the chart lacks the day's bar or the quota line")
	}
	src.err = errors.New("connection refused")
	if code, body := get(); code != http.StatusServiceUnavailable || strings.Contains(body, "connection refused") {
		t.Errorf("unreadable warehouse: %d %q, want 503 without the cause", code, body)
	}
	resp, err := http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// TestStatusPageWarningRun: the last run ended warning with every invoice
// rejected: its row says warning with its open rejects and its coverage
// warning, finance is not fresh, and the page needs attention.
func TestStatusPageWarningRun(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	fresh := now.Add(-time.Hour)
	lag := time.Hour.Seconds()
	finished := now.Add(-50 * time.Minute)
	src := &fakeStatus{rep: &engine.StatusReport{Schema: "agency", QuotaDay: "2026-05-10", Streams: []engine.StreamStatus{
		{Stream: "brands", LastSuccess: &fresh, LagSeconds: &lag},
		{Stream: "finance", Rejected: 196},
	}, Runs: []engine.RunSummary{{RunID: "0123456789ab", Trigger: "serve", Status: "warning", StartedAt: fresh, FinishedAt: &finished,
		Rejected: 196, OpenRejects: 196}},
		Warnings: &engine.RunWarnings{RunID: "0123456789ab", Warnings: []inventory.Warning{{Kind: inventory.KindRejectedStream,
			Stream: "invoices", Message: "196 of 196 invoices records were rejected"}}}}}
	srv := httptest.NewServer(NewStatusPage(src, StatusPageOptions{Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	body := string(b)
	for _, want := range []string{`class="badge b-warning" data-field="status">warning<`, `data-field="open-rejects">196<`,
		`invoices rejected_stream: 196 of 196 invoices records were rejected`, `class="badge b-rejected" data-field="state">not fresh: records rejected<`,
		`data-overall="bad"`, `No sync is running.`, `No scheduled run`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
