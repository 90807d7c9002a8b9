package extract

import (
	"bytes"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// BenchmarkDecodeCommunicationsPage decodes a realistic 1000-row page of the
// communications endpoint (about 1 MB: subjects with escapes, one sender,
// one to three keyed recipients, some cc, people drawn from a pool of 400),
// the largest page the API serves, through SplitPage (which copies the
// records' raw bytes, as the client does).
func BenchmarkDecodeCommunicationsPage(b *testing.B) {
	benchSplitPage(b, genCommsPage(1000, 1, 1, 1000, 2971))
}

// BenchmarkDecodeCommunicationsPageUniquePeople is the worst case of the
// same page: every participant is a different person, so no user object is
// seen twice.
func BenchmarkDecodeCommunicationsPageUniquePeople(b *testing.B) {
	benchSplitPage(b, genCommsPagePool(1000, 1, 1, 1000, 2971, 0))
}

// benchSplitPage splits a 1000-row page body (SplitPage) and reports pages
// and records a second.
func benchSplitPage(b *testing.B, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := SplitPage(body)
		if err != nil || len(p.Records) != 1000 {
			b.Fatalf("split: %v", err)
		}
	}
	elapsed := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/elapsed, "pages/s")
	b.ReportMetric(float64(b.N)*1000/elapsed, "records/s")
}

// BenchmarkDecodeProjectsPage splits a 1000-row projects list.
func BenchmarkDecodeProjectsPage(b *testing.B) {
	benchSplitPage(b, genProjectsPage(1000))
}

// The benchmarks below weigh the JSON libraries against each other on the same
// pages: each splits the page into records and then makes the look-ups a
// declared stream's transform makes (every column's source field, the
// recipients' user objects), summing the lengths of the values found so that
// nothing is optimised away.
//
//	go test -run '^$' -bench 'DecodeLibraries' -benchmem ./extract/
//
// make bench runs them with the other decode benchmarks (figure 7).
//
// The hand-written typed decoder these replaced (decoding every field in
// the same pass) took 2.9-3.9 CPU ms a communications page and 1.56-1.59 a
// projects page against gjson's 6.9-7.2 and 1.78-1.85 with the look-ups,
// 3.3-3.9 and 0.86-0.87 splitting alone (commit "extract: SplitPage walks the
// envelope by offsets"). "stdlib" is encoding/json (records split in order with a
// json.Decoder, looked up in map[string]any decoded with UseNumber, the
// generic way), "gjson" SplitPage plus github.com/tidwall/gjson look-ups
// (one pass over each object's members).

// BenchmarkDecodeLibraries decodes a 1000-row communications page (~1 MB)
// and a 1000-row projects page (~260 KB) with each library.
func BenchmarkDecodeLibraries(b *testing.B) {
	pages := []struct {
		name   string
		body   []byte
		stdlib func(map[string]any) int
		gjson  func(gjson.Result) int
	}{
		{"communications", genCommsPage(1000, 1, 1, 1000, 2971), stdlibCommsLookups, gjsonCommsLookups},
		{"projects", genProjectsPage(1000), stdlibProjectLookups, gjsonProjectLookups},
	}
	for _, p := range pages {
		b.Run(p.name+"/stdlib", func(b *testing.B) {
			benchSplit(b, p.body, func() int { return stdlibSplit(b, p.body, p.stdlib) })
		})
		b.Run(p.name+"/gjson-split", func(b *testing.B) {
			benchSplit(b, p.body, func() int { return gjsonSplit(b, p.body, nil) })
		})
		b.Run(p.name+"/gjson", func(b *testing.B) {
			benchSplit(b, p.body, func() int { return gjsonSplit(b, p.body, p.gjson) })
		})
	}
}

// benchSplit reports wall time and the process's CPU time a page (the
// latter counts the garbage collector's threads and not the time the
// process waited for a core: the fairer figure on a shared machine).
func benchSplit(b *testing.B, body []byte, run func() int) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu0 := processCPU(b)
	for b.Loop() {
		if n := run(); n == 0 {
			b.Fatal("nothing found")
		}
	}
	cpu := processCPU(b) - cpu0
	el := b.Elapsed().Seconds()
	b.ReportMetric(el*1000/float64(b.N), "ms/page")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/page")
	b.ReportMetric(float64(b.N)/el, "pages/s")
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gjsonSplit splits body with SplitPage and runs look on every record.
func gjsonSplit(b *testing.B, body []byte, look func(gjson.Result) int) int {
	p, err := SplitPage(body)
	if err != nil || len(p.Records) != 1000 {
		b.Fatalf("split: %v", err)
	}
	if look == nil {
		return len(p.Records)
	}
	n := 0
	for _, r := range p.Records {
		n += look(gjson.ParseBytes(r.Raw))
	}
	return n
}

// gjsonUser looks up a user object's fields.
func gjsonUser(u gjson.Result) int {
	n := 0
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "first_name", "last_name", "full_name", "email", "phone", "avatar", "status":
			n += len(v.Str) + 1
		}
		return true
	})
	return n
}

func gjsonCommsLookups(rec gjson.Result) int {
	n := 0
	rec.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "email":
			v.ForEach(func(k, f gjson.Result) bool {
				switch k.Str {
				case "type_id", "size", "brand_id", "project_id", "has_attachments":
					n += len(f.Raw)
				case "type_name", "subject", "message", "mailbox_id", "mailbox_thread", "email_at":
					n += len(f.Str) + 1
				}
				return true
			})
		case "users":
			v.ForEach(func(role, list gjson.Result) bool {
				list.ForEach(func(id, u gjson.Result) bool {
					n += len(id.Str) + gjsonUser(u)
					return true
				})
				return true
			})
		}
		return true
	})
	return n
}

func gjsonProjectLookups(rec gjson.Result) int {
	if info := rec.Get("project_info"); info.IsObject() {
		rec = info
	}
	n := 0
	rec.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id", "brand_id", "name", "status", "start_date", "deadline", "closed_at", "updated_at":
			n += len(v.Str) + len(v.Raw)
		case "budget":
			v.ForEach(func(k, f gjson.Result) bool {
				n += len(f.Raw)
				return true
			})
		}
		return true
	})
	return n
}

// stdlibSplit splits body with encoding/json (keeping the rows' order, as
// keyed rows need) and runs look on every record decoded into a map.
func stdlibSplit(b *testing.B, body []byte, look func(map[string]any) int) int {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		b.Fatal(err)
	}
	rows := env.Data
	if len(rows) > 0 && rows[0] == '{' {
		var inner struct {
			Rows json.RawMessage `json:"rows"`
		}
		if err := json.Unmarshal(rows, &inner); err != nil {
			b.Fatal(err)
		}
		rows = inner.Rows
	}
	var raws []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(rows))
	if _, err := dec.Token(); err != nil {
		b.Fatal(err)
	}
	keyed := rows[0] == '{'
	for dec.More() {
		if keyed {
			if _, err := dec.Token(); err != nil {
				b.Fatal(err)
			}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			b.Fatal(err)
		}
		raws = append(raws, raw)
	}
	if len(raws) != 1000 {
		b.Fatalf("%d rows", len(raws))
	}
	n := 0
	for _, raw := range raws {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			b.Fatal(err)
		}
		n += look(m)
	}
	return n
}

// textLen is the length of a looked-up scalar's text.
func textLen(v any) int {
	switch x := v.(type) {
	case string:
		return len(x) + 1
	case json.Number:
		return len(x)
	case bool:
		return 1
	}
	return 0
}

func stdlibUser(u any) int {
	m, _ := u.(map[string]any)
	n := 0
	for _, k := range []string{"first_name", "last_name", "full_name", "email", "phone", "avatar", "status"} {
		n += textLen(m[k])
	}
	return n
}

func stdlibCommsLookups(rec map[string]any) int {
	n := 0
	if e, ok := rec["email"].(map[string]any); ok {
		for _, k := range []string{"type_id", "size", "brand_id", "project_id", "has_attachments", "type_name", "subject", "message", "mailbox_id", "mailbox_thread", "email_at"} {
			n += textLen(e[k])
		}
	}
	if us, ok := rec["users"].(map[string]any); ok {
		for _, role := range []string{"from", "to", "cc", "bcc"} {
			switch l := us[role].(type) {
			case []any:
				for _, u := range l {
					n += stdlibUser(u)
				}
			case map[string]any:
				for id, u := range l {
					n += len(id) + stdlibUser(u)
				}
			}
		}
	}
	return n
}

func stdlibProjectLookups(rec map[string]any) int {
	if info, ok := rec["project_info"].(map[string]any); ok {
		rec = info
	}
	n := 0
	for _, k := range []string{"id", "brand_id", "name", "status", "start_date", "deadline", "closed_at", "updated_at"} {
		n += textLen(rec[k])
	}
	if bd, ok := rec["budget"].(map[string]any); ok {
		n += textLen(bd["amount"]) + textLen(bd["currency"])
	}
	return n
}
