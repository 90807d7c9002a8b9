package progress

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Live keeps the progress of the run in progress in memory, for readers
// that show it while it runs (serve's status page): per stream the pages
// done of each of its lines with their ETA (computed as the log's), the
// records received, rows written and requests spent. The engine is its one
// writer: Begin at a run's start, Update (it is a Display) and Committed as
// pages land, End once the run is recorded. Readers take a Snapshot or wait
// for the next change (Changed). It is safe for concurrent use.
type Live struct {
	mu      sync.Mutex
	now     func() time.Time
	run     *liveRun // nil between runs
	last    string   // the run id of the last run that ended
	version uint64
	changed chan struct{} // closed at the next change
}

type liveRun struct {
	id, trigger string
	streams     []string
	started     time.Time
	budget      int
	spent       int    // requests of the run so far
	cur         string // the stream the run's requests are counted to
	spentAt     int    // spent when cur last got its share
	rows        int64
	rejected    int64
	byStream    map[string]*liveStream
	order       []string
}

type liveStream struct {
	records, rows, rejected int64
	requests                int
	lines                   map[string]*liveLine
	lineOrder               []string
	active                  string // the line updated last
}

type liveLine struct {
	streamProgress
	updated time.Time
}

// NewLive returns a Live with nothing running.
func NewLive() *Live {
	return &Live{now: time.Now, changed: make(chan struct{})}
}

// Begin starts the live progress of run id (trigger, the streams it syncs,
// the requests it may spend).
func (l *Live) Begin(id, trigger string, streams []string, budget int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.run = &liveRun{id: id, trigger: trigger, streams: slices.Clone(streams), started: l.now(), budget: budget,
		byStream: map[string]*liveStream{}}
	for _, s := range streams {
		l.run.stream(s)
	}
	l.bump()
}

// End ends the live progress of run id (recorded in the warehouse by now).
func (l *Live) End(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.run == nil || l.run.id != id {
		return
	}
	l.run, l.last = nil, id
	l.bump()
}

// Update implements Display: line (a stream, or "stream.part" such as
// "finance.invoices" or "projects.details") has done done of total pages.
func (l *Live) Update(line string, done, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.run == nil {
		return
	}
	now := l.now()
	name, _, _ := strings.Cut(line, ".")
	s := l.run.stream(name)
	ln, ok := s.lines[line]
	if !ok {
		ln = &liveLine{streamProgress: streamProgress{started: now, firstDone: done}}
		s.lines[line] = ln
		s.lineOrder = append(s.lineOrder, line)
	}
	ln.done, ln.total, ln.updated = done, total, now
	s.active = line
	l.bump()
}

// Finish implements Display; the run's end is End's.
func (l *Live) Finish() {}

// Committed adds a committed page of stream: records received (loaded or
// rejected), rows written, records rejected; spent is the run's requests so
// far, the share since the last count going to stream.
func (l *Live) Committed(stream string, records, rows, rejected int64, spent int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.run == nil {
		return
	}
	s := l.run.stream(stream)
	s.records += records
	s.rows += rows
	s.rejected += rejected
	l.run.rows += rows
	l.run.rejected += rejected
	l.run.cur = stream
	l.run.count(spent)
	l.bump()
}

// Spent counts the run's requests so far (spent) to the stream of its last
// page.
func (l *Live) Spent(spent int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.run == nil || spent == l.run.spent {
		return
	}
	l.run.count(spent)
	l.bump()
}

func (r *liveRun) count(spent int) {
	if r.cur != "" {
		r.stream(r.cur).requests += spent - r.spentAt
		r.spentAt = spent
	}
	r.spent = spent
}

func (r *liveRun) stream(name string) *liveStream {
	s, ok := r.byStream[name]
	if !ok {
		s = &liveStream{lines: map[string]*liveLine{}}
		r.byStream[name] = s
		r.order = append(r.order, name)
	}
	return s
}

// bump marks a change: the waiting readers wake.
func (l *Live) bump() {
	l.version++
	close(l.changed)
	l.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change.
func (l *Live) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Snapshot is the live progress at one instant.
type Snapshot struct {
	// Version grows with every change.
	Version uint64 `json:"version"`
	// Running says a run is in progress; the rest describes it.
	Running   bool      `json:"running"`
	RunID     string    `json:"run_id,omitempty"`
	Trigger   string    `json:"trigger,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// Budget is the requests the run may spend; Requests what it spent.
	Budget   int   `json:"budget"`
	Requests int   `json:"requests"`
	Rows     int64 `json:"rows"`
	Rejected int64 `json:"rejected"`
	// Streams are the run's streams, in the order they were named.
	Streams []StreamSnapshot `json:"streams"`
	// LastRunID is the run that ended last in this process ("" before any).
	LastRunID string `json:"last_run_id,omitempty"`
}

// StreamSnapshot is one stream of the running run.
type StreamSnapshot struct {
	Stream string `json:"stream"`
	// Records received (loaded or rejected), rows written, records rejected.
	Records  int64 `json:"records"`
	Rows     int64 `json:"rows"`
	Rejected int64 `json:"rejected"`
	// Requests is what the run spent on the stream so far.
	Requests int `json:"requests"`
	// Lines are its paged parts (a list, the details, a range), in the
	// order they started.
	Lines []LineSnapshot `json:"lines"`
	// Active is the line that moved last ("" before any).
	Active string `json:"active,omitempty"`
}

// LineSnapshot is one paged part of a stream.
type LineSnapshot struct {
	Line       string `json:"line"`
	PagesDone  int    `json:"pages_done"`
	PagesTotal int    `json:"pages_total"` // 0: not known yet
	// ETASeconds is the time left at the pace so far, as the progress log
	// computes it; 0 when unknown or done.
	ETASeconds float64 `json:"eta_seconds"`
}

// Snapshot returns the live progress now.
func (l *Live) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	snap := Snapshot{Version: l.version, LastRunID: l.last, Streams: []StreamSnapshot{}}
	r := l.run
	if r == nil {
		return snap
	}
	now := l.now()
	snap.Running, snap.RunID, snap.Trigger, snap.StartedAt = true, r.id, r.trigger, r.started
	snap.Budget, snap.Requests, snap.Rows, snap.Rejected = r.budget, r.spent, r.rows, r.rejected
	for _, name := range r.order {
		s := r.byStream[name]
		ss := StreamSnapshot{Stream: name, Records: s.records, Rows: s.rows, Rejected: s.rejected, Requests: s.requests,
			Active: s.active, Lines: []LineSnapshot{}}
		for _, ln := range s.lineOrder {
			p := s.lines[ln]
			ss.Lines = append(ss.Lines, LineSnapshot{Line: ln, PagesDone: p.done, PagesTotal: p.total,
				ETASeconds: p.eta(now).Round(time.Second).Seconds()})
		}
		snap.Streams = append(snap.Streams, ss)
	}
	return snap
}

// Tee is a Display that updates each of displays.
func Tee(displays ...Display) Display { return tee(displays) }

type tee []Display

func (t tee) Update(stream string, done, total int) {
	for _, d := range t {
		d.Update(stream, done, total)
	}
}

func (t tee) Finish() {
	for _, d := range t {
		d.Finish()
	}
}
