package progress

import (
	"sync"
	"testing"
	"time"
)

// TestLiveFollowsARun: Begin, page updates, commits and requests show in the
// snapshot, per stream and line, with the log's ETA; every change wakes
// the waiting readers; End empties it and names the run that ended.
func TestLiveFollowsARun(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	l := NewLive()
	l.now = func() time.Time { return now }
	if s := l.Snapshot(); s.Running || len(s.Streams) != 0 {
		t.Fatalf("before a run: %+v", s)
	}
	woke := l.Changed()
	l.Begin("run-1", "serve", []string{"brands", "communications"}, 500)
	select {
	case <-woke:
	default:
		t.Fatal("Begin woke no reader")
	}
	l.Update("brands.list", 1, 1)
	l.Committed("brands", 12, 12, 0, 1)
	l.Update("communications", 0, 100)
	now = now.Add(10 * time.Second)
	l.Update("communications", 5, 100)
	l.Committed("communications", 5000, 9000, 3, 7)
	l.Spent(9) // two more requests of the e-mails' task, with no page yet
	s := l.Snapshot()
	if !s.Running || s.RunID != "run-1" || s.Trigger != "serve" || s.Budget != 500 || s.Requests != 9 || s.Rows != 9012 || s.Rejected != 3 {
		t.Fatalf("snapshot %+v", s)
	}
	if len(s.Streams) != 2 || s.Streams[0].Stream != "brands" || s.Streams[1].Stream != "communications" {
		t.Fatalf("streams %+v", s.Streams)
	}
	b, c := s.Streams[0], s.Streams[1]
	if b.Records != 12 || b.Rows != 12 || b.Requests != 1 || len(b.Lines) != 1 || b.Lines[0].PagesDone != 1 || b.Lines[0].ETASeconds != 0 {
		t.Errorf("brands %+v", b)
	}
	// 5 pages in 10 s, 95 to go: 190 s, as the progress log says.
	if c.Records != 5000 || c.Requests != 8 || c.Active != "communications" || c.Lines[0].PagesTotal != 100 || c.Lines[0].ETASeconds != 190 {
		t.Errorf("communications %+v", c)
	}
	woke = l.Changed()
	l.End("run-2") // not the running run: ignored
	select {
	case <-woke:
		t.Fatal("End of another run changed the progress")
	default:
	}
	l.End("run-1")
	if s := l.Snapshot(); s.Running || s.LastRunID != "run-1" || len(s.Streams) != 0 || s.Version == 0 {
		t.Errorf("after End: %+v", s)
	}
	// Updates between runs are no one's.
	l.Update("communications", 6, 100)
	l.Committed("communications", 1, 1, 0, 10)
	if s := l.Snapshot(); s.Running {
		t.Errorf("an update between runs started one: %+v", s)
	}
}

// TestLiveOneWriterManyReaders: readers snapshot and wait while the writer
// moves (run with -race).
func TestLiveOneWriterManyReaders(t *testing.T) {
	t.Parallel()
	l := NewLive()
	l.Begin("r", "run", []string{"communications"}, 10)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ch := l.Changed()
				_ = l.Snapshot()
				select {
				case <-done:
					return
				case <-ch:
				}
			}
		}()
	}
	for i := 1; i <= 200; i++ {
		l.Update("communications", i, 200)
		l.Committed("communications", 1, 1, 0, i)
	}
	l.End("r")
	close(done)
	wg.Wait()
	if s := l.Snapshot(); s.Running || s.LastRunID != "r" {
		t.Errorf("after the run: %+v", s)
	}
}
