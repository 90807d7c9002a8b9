package stream_test

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
)

// sandboxRecords returns the 1000 records of a communications page of the
// default sandbox, split by gjson.
func sandboxRecords(b *testing.B) [][]byte {
	body, err := sandbox.DefaultCommsPage()
	if err != nil {
		b.Fatal(err)
	}
	var out [][]byte
	gjson.GetBytes(body, "data.rows").ForEach(func(_, v gjson.Result) bool {
		out = append(out, []byte(v.Raw))
		return true
	})
	if len(out) != 1000 {
		b.Fatalf("%d records", len(out))
	}
	return out
}

// BenchmarkViewReaders weighs NewView's splitter against gjson doing the
// same job: the views of the 1000 records of a communications page, each
// with the views of its object members (email, users), split by the
// splitter ("scanner") and by gjson's ForEach ("gjson": View.add, the path
// text the splitter refuses takes). The splitter's doc comment quotes the
// ratio.
//
//	go test -run '^$' -bench ViewReaders -count 10 ./stream/
func BenchmarkViewReaders(b *testing.B) {
	recs := sandboxRecords(b)
	b.Run("scanner", func(b *testing.B) {
		for b.Loop() {
			for _, r := range recs {
				if n := stream.ObjectMembers(stream.NewView(r, nil)); n != 2 {
					b.Fatalf("%d object members", n)
				}
			}
		}
	})
	b.Run("gjson", func(b *testing.B) {
		for b.Loop() {
			for _, r := range recs {
				if n := stream.ObjectMembers(stream.GJSONSplitView(r)); n != 2 {
					b.Fatalf("%d object members", n)
				}
			}
		}
	})
}
