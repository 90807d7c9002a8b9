package serve

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/progress"
)

// The status page shows a running sync live: the server renders the run's
// progress as it stands (progress.Live, the engine's running run), and the
// page's one script (/status.js, same origin) follows /events, a stream of
// server-sent events that carries the same view at most once a second while
// the run moves (a comment every 15 s keeps idle connections open), so the
// page updates in place without reloading. It reloads once, when the run it
// follows ends, to show it recorded. Without the script the page is
// complete as rendered.

//go:embed status.js
var statusJS []byte

// Limits of the event streams.
const (
	eventsEvery     = time.Second      // at most one progress event a second per client
	eventsKeepAlive = 15 * time.Second // a comment line on an idle stream
	eventsRetry     = 10 * time.Second // the browser's reconnect delay after a drop
	eventsMaxOpen   = 32               // event streams served at once; more get 503
)

// liveView is what the page shows of the running run and the schedule: the
// template's and the events' data.
type liveView struct {
	Live pageLive  `json:"live"`
	Next *pageNext `json:"next"`
	// Enabled says the page has live progress to follow (/events).
	Enabled bool `json:"-"`
}

// pageLive is the running run as the page shows it.
type pageLive struct {
	Running  bool             `json:"running"`
	RunID    string           `json:"run_id"`
	Short    string           `json:"short"`
	Trigger  string           `json:"trigger"`
	Started  string           `json:"started"`
	Took     string           `json:"took"`
	Requests int              `json:"requests"`
	Budget   int              `json:"budget"`
	Rows     int64            `json:"rows"`
	Rejected int64            `json:"rejected"`
	Streams  []pageLiveStream `json:"streams"`
	Version  uint64           `json:"version"`
}

// pageLiveStream is one stream of the running run.
type pageLiveStream struct {
	Name     string `json:"name"`
	Line     string `json:"line"`  // the part that moved last: list, details, a finance list
	Pages    string `json:"pages"` // "12 / 400", "12" while the total is unknown
	Done     int    `json:"pages_done"`
	Total    int    `json:"pages_total"`
	Records  int64  `json:"records"`
	Rows     int64  `json:"rows"`
	Rejected int64  `json:"rejected"`
	Requests int    `json:"requests"`
	ETA      string `json:"eta"` // the progress log's estimate of the line, "—" when unknown
}

// pageNext is the next scheduled run.
type pageNext struct {
	At      string `json:"at"`
	In      string `json:"in"`
	Streams string `json:"streams"`
}

// viewOf renders a live snapshot at now.
func viewOf(s progress.Snapshot, now time.Time) pageLive {
	v := pageLive{Running: s.Running, RunID: s.RunID, Short: shortID(s.RunID), Trigger: s.Trigger, Requests: s.Requests,
		Budget: s.Budget, Rows: s.Rows, Rejected: s.Rejected, Version: s.Version, Streams: []pageLiveStream{}}
	if !s.Running {
		return v
	}
	v.Started = s.StartedAt.UTC().Format("2006-01-02 15:04:05")
	v.Took = humanDuration(now.Sub(s.StartedAt))
	for _, st := range s.Streams {
		ps := pageLiveStream{Name: st.Stream, Records: st.Records, Rows: st.Rows, Rejected: st.Rejected, Requests: st.Requests, ETA: "—", Pages: "—"}
		for _, ln := range st.Lines {
			ps.Done += ln.PagesDone
			ps.Total += ln.PagesTotal
			if ln.Line != st.Active {
				continue
			}
			_, part, _ := strings.Cut(ln.Line, ".")
			ps.Line = part
			if ln.ETASeconds > 0 {
				ps.ETA = humanDuration(time.Duration(ln.ETASeconds) * time.Second)
			}
		}
		if len(st.Lines) > 0 {
			ps.Pages = fmt.Sprint(ps.Done)
			if ps.Total > 0 {
				ps.Pages = fmt.Sprintf("%d / %d", ps.Done, ps.Total)
			}
		}
		v.Streams = append(v.Streams, ps)
	}
	return v
}

// nextRun is the next run of schedules after now (in loc), nil without one.
func nextRun(schedules []Schedule, loc *time.Location, now time.Time) *pageNext {
	var at time.Time
	var streams []string
	for _, s := range schedules {
		sched, err := cron.ParseStandard(s.Spec)
		if err != nil {
			continue // serve.Run refuses it before the page is served
		}
		n := sched.Next(now.In(loc))
		switch {
		case at.IsZero() || n.Before(at):
			at, streams = n, slices.Clone(s.Streams)
		case n.Equal(at):
			streams = append(streams, s.Streams...)
		}
	}
	if at.IsZero() {
		return nil
	}
	return &pageNext{At: at.UTC().Format("2006-01-02 15:04 UTC"), In: humanDuration(at.Sub(now)), Streams: strings.Join(streams, ", ")}
}

// live is the current live view.
func (p *StatusPage) live() liveView {
	now := p.opts.Now()
	v := liveView{Live: pageLive{Streams: []pageLiveStream{}}, Next: nextRun(p.opts.Schedules, p.opts.Location, now),
		Enabled: p.opts.Live != nil}
	if v.Enabled {
		v.Live = viewOf(p.opts.Live.Snapshot(), now)
	}
	return v
}

// serveScript answers /status.js.
func (p *StatusPage) serveScript(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(statusJS)
}

// serveEvents answers /events: the live view now, then again whenever the
// run moves (at most once a second), until the client goes or the server
// shuts down.
func (p *StatusPage) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok || p.opts.Live == nil {
		http.Error(w, "live progress is not available", http.StatusNotFound)
		return
	}
	if !p.acquire() {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many live views open", http.StatusServiceUnavailable)
		return
	}
	defer p.release()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // a proxy in front must not hold the events back
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", eventsRetry.Milliseconds()); err != nil {
		return
	}
	keepAlive := time.NewTicker(eventsKeepAlive)
	defer keepAlive.Stop()
	var sent uint64
	first := true
	for {
		changed := p.opts.Live.Changed()
		v := p.live()
		if first || v.Live.Version != sent {
			if err := writeEvent(w, v); err != nil {
				return
			}
			fl.Flush()
			sent, first = v.Live.Version, false
			if !p.pause(r.Context(), eventsEvery) {
				return
			}
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-p.streams.done:
			return
		case <-changed:
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// pause waits d unless the client goes or the server shuts down first.
func (p *StatusPage) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-p.streams.done:
		return false
	case <-t.C:
		return true
	}
}

func writeEvent(w http.ResponseWriter, v liveView) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode live view: %w", err)
	}
	_, err = fmt.Fprintf(w, "event: progress\ndata: %s\n\n", b)
	return err
}

// eventStreams counts the open event streams and ends them at shutdown.
type eventStreams struct {
	mu   sync.Mutex
	open int
	done chan struct{}
	once sync.Once
}

func (p *StatusPage) acquire() bool {
	p.streams.mu.Lock()
	defer p.streams.mu.Unlock()
	if p.streams.open >= eventsMaxOpen {
		p.opts.Logger.Warn("status page: live view refused, too many open", zap.Int("open", p.streams.open))
		return false
	}
	p.streams.open++
	return true
}

func (p *StatusPage) release() {
	p.streams.mu.Lock()
	defer p.streams.mu.Unlock()
	p.streams.open--
}

// Close ends the open event streams (serve calls it when its HTTP server
// shuts down, which waits for handlers to return).
func (p *StatusPage) Close() {
	p.streams.once.Do(func() { close(p.streams.done) })
}
