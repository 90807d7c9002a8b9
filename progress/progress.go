// Package progress shows how far each stream of a run has paged: bars
// redrawn in place on a terminal, throttled log lines elsewhere.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Display receives page-level progress of each stream. A bar is drawn on a
// terminal; off a terminal, periodic log lines are written instead.
type Display interface {
	// Update reports that a stream has done `done` of `total` pages (total 0:
	// unknown yet).
	Update(stream string, done, total int)
	// Finish ends the display.
	Finish()
}

// Nop reports nothing.
type Nop struct{}

// Update implements Display.
func (Nop) Update(string, int, int) {}

// Finish implements Display.
func (Nop) Finish() {}

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

// Bar draws one line per stream on a terminal, redrawn in place.
type Bar struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	order   []string
	streams map[string]*streamProgress
	lines   int
}

// NewBar draws bars on w (a terminal).
func NewBar(w io.Writer) *Bar {
	return &Bar{w: w, now: time.Now, streams: map[string]*streamProgress{}}
}

// Update implements Display.
func (b *Bar) Update(stream string, done, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.track(stream, done, b.now())
	s.done, s.total = done, total
	b.draw()
}

func (b *Bar) track(stream string, done int, now time.Time) *streamProgress {
	s, ok := b.streams[stream]
	if !ok {
		s = &streamProgress{started: now, firstDone: done}
		b.streams[stream] = s
		b.order = append(b.order, stream)
	}
	return s
}

func (b *Bar) draw() {
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

// Finish implements Display.
func (b *Bar) Finish() {}

// Log writes a progress log line per stream at most every interval.
type Log struct {
	mu       sync.Mutex
	log      *zap.Logger
	every    time.Duration
	now      func() time.Time
	streams  map[string]*streamProgress
	lastLine map[string]time.Time
}

// NewLog logs progress at most once per interval per stream.
func NewLog(log *zap.Logger, every time.Duration) *Log {
	return &Log{log: log, every: every, now: time.Now, streams: map[string]*streamProgress{}, lastLine: map[string]time.Time{}}
}

// Update implements Display.
func (l *Log) Update(stream string, done, total int) {
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

// Finish implements Display.
func (l *Log) Finish() {}
