package benchmark

import (
	"math"
	"testing"
)

func TestRequestAndPagesRate(t *testing.T) {
	log := []byte(`{"msg":"sync started","ts":"2026-01-01T00:00:00Z"}
{"msg":"request","ts":"2026-01-01T00:00:00.1Z","endpoint":"brand","duration":0.05}
{"msg":"request","ts":"2026-01-01T00:00:00.2Z","endpoint":"project","duration":0.05}
{"msg":"request","ts":"2026-01-01T00:00:00.3Z","endpoint":"brands","duration":0.05}
{"msg":"request","ts":"2026-01-01T00:00:00.35Z","endpoint":"brand_contacts","duration":0.05}
{"msg":"request","ts":"2026-01-01T00:00:01Z","endpoint":"communications","duration":0.5}
{"msg":"request","ts":"2026-01-01T00:00:01.2Z","endpoint":"communications","duration":0.5}
{"msg":"request","ts":"2026-01-01T00:00:01.3Z","endpoint":"communications","duration":0.5}
{"msg":"communications range done","ts":"2026-01-01T00:00:02Z"}
{"msg":"request","ts":"2026-01-01T00:00:03Z","endpoint":"communications","duration":0.1}
not json
`)
	d := RequestRate(log, isDetail)
	if d.N != 3 || math.Abs(d.Rate-2/0.25) > 1e-6 {
		t.Errorf("details %+v, want 3 requests at 8/s", d)
	}
	p := PagesRate(log)
	if p.N != 3 || math.Abs(p.Rate-2.0/1) > 1e-6 {
		t.Errorf("pages %+v, want 3 pages at 2/s (first answer at 1 s, done at 2 s)", p)
	}
	if r := RequestRate(nil, isComms); r.N != 0 || !math.IsNaN(r.Rate) {
		t.Errorf("empty log %+v", r)
	}
}
