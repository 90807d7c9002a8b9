package extract

import (
	"testing"
	"unsafe"

	"github.com/tidwall/gjson"
)

// BenchmarkPageScanner weighs SplitPage's own scanner against gjson doing
// the same job on a 1000-row communications page: validating the body
// ("validate": scanJSON against gjson.Valid) and splitting it into its
// records ("split"): SplitPage (a copy, scanJSON listing the spans, the walk
// by offsets) against the same walk after gjson.Valid and maxNesting
// ("gjson-valid": the walk then finds each record's end by matchBracket) and
// against gjson.Valid and gjson's ForEach over data.rows ("gjson"). The doc
// comments of splitter and scanJSON quote the ratios.
//
//	go test -run '^$' -bench PageScanner -count 10 ./extract/
func BenchmarkPageScanner(b *testing.B) {
	body := genCommsPage(1000, 1, 1, 1000, 2971)
	b.Run("validate/scanner", func(b *testing.B) {
		for b.Loop() {
			if _, err := validJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate/gjson", func(b *testing.B) {
		for b.Loop() {
			if !gjson.ValidBytes(body) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("split/scanner", func(b *testing.B) {
		for b.Loop() {
			if p, err := SplitPage(body); err != nil || len(p.Records) != 1000 {
				b.Fatalf("split: %v", err)
			}
		}
	})
	b.Run("split/gjson-valid", func(b *testing.B) {
		for b.Loop() {
			own := append([]byte(nil), body...)
			depth := maxNesting(own)
			if !gjson.ValidBytes(own) {
				b.Fatal("invalid")
			}
			sp := splitter{own: own, str: unsafe.String(unsafe.SliceData(own), len(own)), deep: depth > maxDepth+1}
			sp.page = &Page{Records: make([]Record, 0, countHint(own))}
			sp.envelope(sp.ws(0), 0)
			if len(sp.page.Records) != 1000 {
				b.Fatal(len(sp.page.Records))
			}
		}
	})
	b.Run("split/gjson", func(b *testing.B) {
		for b.Loop() {
			own := append([]byte(nil), body...)
			if !gjson.ValidBytes(own) {
				b.Fatal("invalid")
			}
			var recs [][]byte
			gjson.GetBytes(own, "data.rows").ForEach(func(_, v gjson.Result) bool {
				recs = append(recs, own[v.Index:v.Index+len(v.Raw)])
				return true
			})
			if len(recs) != 1000 {
				b.Fatal(len(recs))
			}
		}
	})
}
