package engine

import (
	"sync"
	"time"

	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/transform"
)

// runStats gathers, per task of a run, what sync_runs.streams_detail keeps:
// requests spent, records read, duration and the communications ranges
// fetched. Tasks run one after the other; pages commit inside their task.
type runStats struct {
	mu      sync.Mutex
	cur     Task
	started time.Time
	spent0  int
	tasks   map[Task]*load.TaskDetail
}

// begin starts task t; spent is the run's requests so far.
func (s *runStats) begin(t Task, spent int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tasks == nil {
		s.tasks = map[Task]*load.TaskDetail{}
	}
	if s.tasks[t] == nil {
		s.tasks[t] = &load.TaskDetail{Stream: t.Stream()}
	}
	s.cur, s.started, s.spent0 = t, now, spent
}

// end closes the current task; spent is the run's requests so far.
func (s *runStats) end(spent int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.tasks[s.cur]
	if d == nil {
		return
	}
	d.Requests += spent - s.spent0
	d.DurationSeconds += now.Sub(s.started).Seconds()
	s.cur = ""
}

// read adds a committed page's records to the current task.
func (s *runStats) read(b *transform.Batch) {
	n := pageRecords(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.tasks[s.cur]; d != nil {
		d.RecordsRead += n
	}
}

// rangePage records a committed communications page of range from..to
// carrying records records; last says it was the range's last page.
func (s *runStats) rangePage(from, to string, records int64, last bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.tasks[s.cur]
	if d == nil {
		return
	}
	n := len(d.Ranges)
	if n == 0 || d.Ranges[n-1].From != from || d.Ranges[n-1].To != to || d.Ranges[n-1].Complete {
		d.Ranges = append(d.Ranges, load.RangeFetched{From: from, To: to})
		n++
	}
	rg := &d.Ranges[n-1]
	rg.Pages++
	rg.Records += records
	rg.Complete = last
}

// detail returns the gathered figures by task name.
func (s *runStats) detail() map[string]load.TaskDetail {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]load.TaskDetail, len(s.tasks))
	for t, d := range s.tasks {
		c := *d
		c.Ranges = append([]load.RangeFetched(nil), d.Ranges...)
		out[string(t)] = c
	}
	return out
}

// pageRecords is the number of service records a page carries: the listed
// or detailed entities, brand contacts, e-mails, and the rejected records.
func pageRecords(b *transform.Batch) int64 { return int64(b.Records()) }
