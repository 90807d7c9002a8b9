package spool

import (
	"path/filepath"
	"runtime"
	"testing"
)

// pageAppender appends a page-sized JSON value the way a batch does: many
// small appends, so that a buffer too small for it grows again and again.
type pageAppender struct{ rows int }

func (p pageAppender) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, '[')
	for i := range p.rows {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"record_id":123456789,"subject":"Quarterly review of the brand's campaign","email_at":"2026-11-01T10:00:00Z"}`...)
	}
	return append(buf, ']'), nil
}

// BenchmarkPutAfterGC spools a 2 MB page after each of two garbage
// collections, which empty sync.Pool: the case of a run whose pages are
// far apart in allocations (a page's transform allocates megabytes), where
// Put's pooled buffer is often gone. Timed: Put alone.
//
//	go test -run '^$' -bench PutAfterGC -benchmem ./spool/
func BenchmarkPutAfterGC(b *testing.B) {
	d := Open(filepath.Join(b.TempDir(), "spool"), nil).Prepare()
	v := pageAppender{rows: 20000}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		runtime.GC()
		b.StartTimer()
		d.Put("page", v)
	}
}
