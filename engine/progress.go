package engine

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Progress receives page-level progress of each stream. A bar is drawn on a
// terminal; off a terminal, periodic log lines are written instead.
type Progress interface {
	// Update reports that a stream has done `done` of `total` pages (total 0:
	// unknown yet).
	Update(stream string, done, total int)
	// Finish ends the display.
	Finish()
}

// NopProgress reports nothing.
type NopProgress struct{}

// Update implements Progress.
func (NopProgress) Update(string, int, int) {}

// Finish implements Progress.
func (NopProgress) Finish() {}

type streamProgress struct {
	done, total int
	started     time.Time
	firstDone   int
}

// eta estimates the time left from the pace so far.
func (s *streamProgress) eta(now time.Time) time.Duration {
	pages := s.done - s.firstDone
	if pages <= 0 || s.total <= s.done {
		return 0
	}
	per := now.Sub(s.started) / time.Duration(pages)
	return per * time.Duration(s.total-s.done)
}

// BarProgress draws one line per stream on a terminal, redrawn in place.
type BarProgress struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	order   []string
	streams map[string]*streamProgress
	lines   int
}

// NewBarProgress draws bars on w (a terminal).
func NewBarProgress(w io.Writer) *BarProgress {
	return &BarProgress{w: w, now: time.Now, streams: map[string]*streamProgress{}}
}

// Update implements Progress.
func (b *BarProgress) Update(stream string, done, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.track(stream, done, b.now())
	s.done, s.total = done, total
	b.draw()
}

func (b *BarProgress) track(stream string, done int, now time.Time) *streamProgress {
	s, ok := b.streams[stream]
	if !ok {
		s = &streamProgress{started: now, firstDone: done}
		b.streams[stream] = s
		b.order = append(b.order, stream)
	}
	return s
}

func (b *BarProgress) draw() {
	var sb strings.Builder
	if b.lines > 0 {
		fmt.Fprintf(&sb, "\x1b[%dA", b.lines) // back to the first bar
	}
	now := b.now()
	for _, name := range b.order {
		s := b.streams[name]
		sb.WriteString("\r\x1b[2K")
		sb.WriteString(renderBar(name, s, now))
		sb.WriteByte('\n')
	}
	b.lines = len(b.order)
	_, _ = io.WriteString(b.w, sb.String())
}

func renderBar(name string, s *streamProgress, now time.Time) string {
	const width = 30
	if s.total <= 0 {
		return fmt.Sprintf("%-16s [%s] %d pages", name, strings.Repeat("·", width), s.done)
	}
	filled := min(width, s.done*width/s.total)
	line := fmt.Sprintf("%-16s [%s%s] %d/%d pages", name, strings.Repeat("#", filled), strings.Repeat("·", width-filled), s.done, s.total)
	if eta := s.eta(now); eta > 0 {
		line += fmt.Sprintf("  ETA %s", eta.Round(time.Second))
	}
	return line
}

// Finish implements Progress.
func (b *BarProgress) Finish() {}

// LogProgress writes a progress log line per stream at most every interval.
type LogProgress struct {
	mu       sync.Mutex
	log      *zap.Logger
	every    time.Duration
	now      func() time.Time
	streams  map[string]*streamProgress
	lastLine map[string]time.Time
}

// NewLogProgress logs progress at most once per interval per stream.
func NewLogProgress(log *zap.Logger, every time.Duration) *LogProgress {
	return &LogProgress{log: log, every: every, now: time.Now, streams: map[string]*streamProgress{}, lastLine: map[string]time.Time{}}
}

// Update implements Progress.
func (l *LogProgress) Update(stream string, done, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	s, ok := l.streams[stream]
	if !ok {
		s = &streamProgress{started: now, firstDone: done}
		l.streams[stream] = s
	}
	s.done, s.total = done, total
	if last, ok := l.lastLine[stream]; ok && now.Sub(last) < l.every && done != total {
		return
	}
	l.lastLine[stream] = now
	fields := []zap.Field{zap.String("stream", stream), zap.Int("pages_done", done)}
	if total > 0 {
		fields = append(fields, zap.Int("pages_total", total))
		if eta := s.eta(now); eta > 0 {
			fields = append(fields, zap.Duration("eta", eta.Round(time.Second)))
		}
	}
	l.log.Info("progress", fields...)
}

// Finish implements Progress.
func (l *LogProgress) Finish() {}
