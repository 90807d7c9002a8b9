package serve

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/progress"
)

// StatusSource is what the status page reads; *engine.Engine implements it.
type StatusSource interface {
	// Status is the report of `agencysync status` (streams, today's quota, last runs).
	Status(ctx context.Context, lastRuns int) (*engine.StatusReport, error)
	// RequestHistory is the requests counted per quota day, oldest first,
	// over the days that end with today.
	RequestHistory(ctx context.Context, days int) ([]load.DayRequests, error)
	// DailyQuota is the requests per day allowed to the key.
	DailyQuota() int
}

// StatusPageOptions tunes the status page.
type StatusPageOptions struct {
	// Runs is how many recent runs the page lists (default 10).
	Runs int
	// Days is how many quota days the request chart shows (default 30).
	Days int
	// StaleAfter marks a stream stale when its last success is older (default 26h:
	// a daily schedule plus slack).
	StaleAfter time.Duration
	// Now is the clock of the page's "generated at" (default time.Now).
	Now func() time.Time
	// Logger receives the errors of reading the warehouse (nil: none).
	Logger *zap.Logger
	// Live is the progress of the running sync (the engine's Deps.Live):
	// the page shows it, and /events streams it; nil shows none.
	Live *progress.Live
	// Schedules and Location are serve's schedules: the page shows the
	// next scheduled run (none without schedules).
	Schedules []Schedule
	Location  *time.Location
}

//go:embed page.html
var pageHTML string

// ParsePage parses an HTML page in the frame the status page and the fleet
// view share (page.html: the head, the shared look and <main>). Its text
// calls {{template "page" .}} and defines the templates the frame names:
// "title", "head", "style" and "main". It panics when either fails to parse.
func ParsePage(name, text string) *template.Template {
	return template.Must(template.Must(template.New(name).Parse(pageHTML)).Parse(text))
}

//go:embed statuspage.html
var statusPageHTML string

var statusPageTmpl = ParsePage("status", statusPageHTML)

// StatusPage is serve's status page: `/`, one HTML page (inline CSS and
// SVG, no external asset; complete without its script) with the running
// sync's progress and the next scheduled run, each stream's freshness and
// state, today's quota, a chart of requests per day and the last runs with
// their status, warnings and rejects; `/status.js`, its script, which keeps
// the running sync's progress current from `/events` (server-sent events).
type StatusPage struct {
	src     StatusSource
	opts    StatusPageOptions
	streams eventStreams
}

// NewStatusPage returns the status page of src.
func NewStatusPage(src StatusSource, opts StatusPageOptions) *StatusPage {
	if opts.Runs <= 0 {
		opts.Runs = 10
	}
	if opts.Days <= 0 {
		opts.Days = 30
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 26 * time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	return &StatusPage{src: src, opts: opts, streams: eventStreams{done: make(chan struct{})}}
}

// Mount serves the page's paths on mux: /, /status.js and /events.
func (p *StatusPage) Mount(mux *http.ServeMux) {
	mux.Handle("/{$}", p)
	mux.HandleFunc("GET /status.js", p.serveScript)
	mux.HandleFunc("GET /events", p.serveEvents)
}

// ServeHTTP answers / with the page.
func (p *StatusPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	view, err := p.build(ctx)
	if err != nil {
		p.opts.Logger.Error("status page: read the warehouse", zap.Error(err))
		http.Error(w, "status page unavailable: cannot read the warehouse (see the log)", http.StatusServiceUnavailable)
		return
	}
	// Nothing external may load: the page must work offline. Its one
	// script and its event stream are its own.
	const csp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'self'; connect-src 'self'"
	if err := RenderPage(w, statusPageTmpl, view, csp, "status page"); err != nil {
		p.opts.Logger.Error("status page: render", zap.Error(err))
	}
}

// RenderPage writes tmpl executed with view as an HTML page that is never
// cached, under the Content-Security-Policy csp. When the template fails it
// answers 500 ("<name> unavailable: render failed") and returns the error.
func RenderPage(w http.ResponseWriter, tmpl *template.Template, view any, csp, name string) error {
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, view); err != nil {
		http.Error(w, name+" unavailable: render failed", http.StatusInternalServerError)
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", csp)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// The view the template renders.
type pageView struct {
	Schema      string
	Generated   string
	Overall     string // ok, warn or bad
	OverallText string
	QuotaDay    string
	Quota       int
	Spent       int
	Left        int
	SpentPct    float64
	Streams     []pageStream
	Chart       pageChart
	Runs        []pageRun
	Last        *pageRun // the latest run, nil when none
	Live        liveView // the running sync and the next scheduled run
}

type pageStream struct {
	Name        string
	State       string // fresh, stale, resuming, never, rejected, syncing
	StateText   string
	LastSuccess string
	Lag         string
	Watermark   string
	Rows        int64
	Rejected    int64
}

type pageRun struct {
	ID          string
	Short       string
	Trigger     string
	Status      string
	Started     string
	Took        string
	Requests    int
	Rows        int
	Rejected    int
	OpenRejects int
	Error       string
	Warnings    []string
}

type pageChart struct {
	Width, Height int
	Total, Max    int
	Bars          []pageBar
	Grid          []pageGrid
	QuotaY        float64 // y of the daily quota line; <0 when off the chart
	PlotX, PlotW  float64
	BaseY         float64
}

type pageBar struct {
	Day         string
	Label       string // axis label, every few days
	Requests    int
	X, Y, W, H  float64
	LabelX      float64
	Today       bool
	OverReserve bool
}

type pageGrid struct {
	Y     float64
	Label string
}

func (p *StatusPage) build(ctx context.Context) (*pageView, error) {
	rep, err := p.src.Status(ctx, p.opts.Runs)
	if err != nil {
		return nil, err
	}
	hist, err := p.src.RequestHistory(ctx, p.opts.Days)
	if err != nil {
		return nil, err
	}
	now := p.opts.Now()
	v := &pageView{Schema: rep.Schema, Generated: now.UTC().Format("2006-01-02 15:04:05 UTC"), QuotaDay: rep.QuotaDay,
		Quota: p.src.DailyQuota(), Spent: rep.QuotaSpent, Left: rep.QuotaLeft, Live: p.live()}
	if v.Quota > 0 {
		v.SpentPct = math.Min(100, math.Round(1000*float64(v.Spent)/float64(v.Quota))/10)
	}
	worst := 0 // 0 ok, 1 warn, 2 bad
	for _, s := range rep.Streams {
		ps, w := p.stream(s, &v.Live.Live)
		v.Streams = append(v.Streams, ps)
		worst = max(worst, w)
	}
	for i, r := range rep.Runs {
		pr := p.run(r, &v.Live.Live, now)
		if i == 0 && rep.Warnings != nil && rep.Warnings.RunID == r.RunID {
			for _, w := range rep.Warnings.Warnings {
				pr.Warnings = append(pr.Warnings, fmt.Sprintf("%s %s: %s", w.Stream, w.Kind, w.Message))
			}
		}
		if i == 0 {
			switch r.Status {
			case string(engine.StatusFailed):
				worst = max(worst, 2)
			case string(engine.StatusPartial), string(engine.StatusWarning):
				worst = max(worst, 1)
			}
			if len(pr.Warnings) > 0 {
				worst = max(worst, 1)
			}
		}
		v.Runs = append(v.Runs, pr)
	}
	if len(v.Runs) > 0 {
		v.Last = &v.Runs[0]
	}
	v.Overall, v.OverallText = [...]string{"ok", "warn", "bad"}[worst], [...]string{"all streams fresh", "needs a look", "attention"}[worst]
	if worst == 0 && v.Live.Live.Running {
		v.Overall, v.OverallText = "syncing", "syncing"
	}
	v.Chart = buildChart(hist, v.Quota, rep.QuotaDay)
	return v, nil
}

// stream is a stream's row and how bad its state is (0 ok, 1 warn, 2 bad).
// A stream the running sync is syncing says so, with its progress.
func (p *StatusPage) stream(s engine.StreamStatus, live *pageLive) (pageStream, int) {
	ps := pageStream{Name: s.Stream, LastSuccess: pageTime(s.LastSuccess), Watermark: pageTime(s.Watermark),
		Rows: s.Rows, Rejected: s.Rejected, Lag: "—"}
	if s.LagSeconds != nil {
		ps.Lag = humanDuration(time.Duration(*s.LagSeconds) * time.Second)
	}
	worst := 0
	if s.Rejected > 0 {
		worst = 1 // open rejects: the data is incomplete
	}
	for _, ls := range live.Streams {
		if ls.Name == s.Stream {
			ps.State, ps.StateText = "syncing", "syncing: "+ls.Pages+" pages"
			if ls.ETA != "—" {
				ps.StateText += ", ETA " + ls.ETA
			}
			return ps, worst
		}
	}
	switch {
	case s.LastSuccess == nil && s.Rejected > 0:
		ps.State, ps.StateText = "rejected", "not fresh: records rejected"
		worst = max(worst, 2)
	case s.LastSuccess == nil:
		ps.State, ps.StateText = "never", "never synced"
		worst = max(worst, 1)
	case s.InProgress:
		ps.State, ps.StateText = "resuming", "resumes next run"
		worst = max(worst, 1)
	case s.LagSeconds != nil && time.Duration(*s.LagSeconds)*time.Second > p.opts.StaleAfter:
		ps.State, ps.StateText = "stale", "stale"
		worst = max(worst, 2)
	default:
		ps.State, ps.StateText = "fresh", "fresh"
	}
	return ps, worst
}

// run is a run's row; the running run shows the live figures.
func (p *StatusPage) run(r engine.RunSummary, live *pageLive, now time.Time) pageRun {
	pr := pageRun{ID: r.RunID, Short: shortID(r.RunID), Trigger: r.Trigger, Status: r.Status,
		Started: r.StartedAt.UTC().Format("2006-01-02 15:04:05"), Took: "—", Requests: r.RequestsUsed, Rejected: r.Rejected,
		OpenRejects: r.OpenRejects}
	if r.FinishedAt != nil {
		pr.Took = humanDuration(r.FinishedAt.Sub(r.StartedAt))
	}
	for _, n := range r.RowsByTable {
		pr.Rows += n
	}
	if r.Status == load.RunRunning && live.Running && live.RunID == r.RunID {
		pr.Requests, pr.Rows, pr.Rejected = live.Requests, int(live.Rows), int(live.Rejected)
		pr.Took = humanDuration(now.Sub(r.StartedAt)) + " so far"
	}
	pr.Error, pr.Warnings = SplitRunNotes(r.Error)
	return pr
}

// SplitRunNotes splits sync_runs.error into the error proper and the run's
// warnings (the notes the engine appends as "; notes: a; b").
func SplitRunNotes(text string) (errText string, warnings []string) {
	text = strings.TrimSpace(text)
	var notes string
	if rest, ok := strings.CutPrefix(text, "notes: "); ok {
		notes = rest
	} else if i := strings.LastIndex(text, "; notes: "); i >= 0 {
		errText, notes = text[:i], text[i+len("; notes: "):]
	} else {
		return text, nil
	}
	for n := range strings.SplitSeq(notes, "; ") {
		if n = strings.TrimSpace(n); n != "" {
			warnings = append(warnings, n)
		}
	}
	return errText, warnings
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH                = 1080, 240
	chartLeft, chartRight         = 56, 12
	chartTop, chartBottom         = 16, 36
	chartLabelEvery               = 5
	chartGridLines                = 4
	chartMinBarGap        float64 = 2
)

func buildChart(hist []load.DayRequests, quota int, today string) pageChart {
	c := pageChart{Width: chartW, Height: chartH, PlotX: chartLeft, PlotW: chartW - chartLeft - chartRight, BaseY: chartH - chartBottom, QuotaY: -1}
	for _, d := range hist {
		c.Total += d.Requests
		c.Max = max(c.Max, d.Requests)
	}
	top := niceCeil(max(c.Max, 1))
	if quota > 0 && quota <= top*2 && quota > top {
		top = niceCeil(quota) // show the quota line when it is near
	}
	plotH := c.BaseY - chartTop
	if quota > 0 && quota <= top {
		c.QuotaY = c.BaseY - plotH*float64(quota)/float64(top)
	}
	for i := 1; i <= chartGridLines; i++ {
		val := top * i / chartGridLines
		c.Grid = append(c.Grid, pageGrid{Y: c.BaseY - plotH*float64(val)/float64(top), Label: compactInt(val)})
	}
	n := len(hist)
	if n == 0 {
		return c
	}
	slot := c.PlotW / float64(n)
	gap := math.Max(chartMinBarGap, slot*0.2)
	for i, d := range hist {
		h := plotH * float64(d.Requests) / float64(top)
		if d.Requests > 0 && h < 1 {
			h = 1
		}
		day := d.Day.Format(time.DateOnly)
		b := pageBar{Day: day, Requests: d.Requests, X: round1(c.PlotX + float64(i)*slot + gap/2), W: round1(slot - gap),
			Y: round1(c.BaseY - h), H: round1(h), LabelX: round1(c.PlotX + float64(i)*slot + slot/2), Today: day == today,
			OverReserve: quota > 0 && d.Requests > quota}
		if (n-1-i)%chartLabelEvery == 0 {
			b.Label = d.Day.Format("Jan 2")
		}
		c.Bars = append(c.Bars, b)
	}
	for i := range c.Grid {
		c.Grid[i].Y = round1(c.Grid[i].Y)
	}
	c.QuotaY = round1(c.QuotaY)
	return c
}

// niceCeil returns the top of the chart's scale for a largest value n: four
// grid steps of 1, 2, 2.5 or 5 times a power of ten that reach n.
func niceCeil(n int) int {
	for p := 1; ; p *= 10 {
		for _, step := range []int{p, 2 * p, 25 * p / 10, 5 * p} {
			if step*chartGridLines >= n {
				return step * chartGridLines
			}
		}
	}
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func compactInt(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return fmt.Sprintf("%gM", float64(n)/1e6)
	case n >= 1000 && n%100 == 0:
		return fmt.Sprintf("%gk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func pageTime(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// humanDuration prints d the way people read a lag: "4 s", "3 m 05 s", "2 h 10 m", "3 d 4 h".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		return fmt.Sprintf("%d m %02d s", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%d h %02d m", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%d d %d h", s/86400, s%86400/3600)
}
