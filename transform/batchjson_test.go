package transform

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agencysync/agencysync/stream"
)

// marshalPlain is Batch.MarshalJSON written the straightforward way (each
// value marshalled by encoding/json, then the whole): the oracle of the
// appending encoder.
func marshalPlain(b Batch) ([]byte, error) {
	out := batchJSON{Rejects: b.Rejects, Coverage: b.Coverage}
	if len(b.Tables) > 0 {
		out.Tables = make(map[string]tableJSON, len(b.Tables))
	}
	for name, tr := range b.Tables {
		var tj tableJSON
		for _, r := range tr.Rows {
			enc := make([]json.RawMessage, len(r))
			for i, v := range r {
				e, err := encodeValue(v)
				if err != nil {
					return nil, fmt.Errorf("encode %s.%s: %w", name, tr.Table.Columns[i].Name, err)
				}
				enc[i] = e
			}
			tj.Rows = append(tj.Rows, enc)
		}
		for _, p := range tr.Parents {
			e, err := encodeValue(p)
			if err != nil {
				return nil, err
			}
			tj.Parents = append(tj.Parents, e)
		}
		out.Tables[name] = tj
	}
	return json.Marshal(out)
}

func encodeValue(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case json.RawMessage:
		if x == nil {
			return json.RawMessage("null"), nil
		}
		// Wrapped, so that a stored JSON null stays apart from SQL NULL.
		return json.Marshal(map[string]json.RawMessage{"j": x})
	case time.Time:
		return json.Marshal(x.Format(time.RFC3339Nano))
	case string, int64, int32, bool:
		return json.Marshal(x)
	}
	return nil, fmt.Errorf("value %v of unexpected type %T", v, v)
}

// randomValue draws a value of a column's type, NULL now and then, with the
// characters JSON must escape.
func randomValue(r *rand.Rand, typ stream.Type) any {
	if r.IntN(6) == 0 {
		return nil
	}
	text := func() string {
		alphabet := []string{"a", "Ș", "\"", "\\", "\n", "\t", "\x01", "\x1f", "<", "&", "€", " ", "\u2028", "\xff"}
		var sb strings.Builder
		for range r.IntN(12) {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return sb.String()
	}
	switch typ {
	case stream.Text, stream.ID, stream.Numeric:
		return text()
	case stream.BigInt:
		return r.Int64() - r.Int64()
	case stream.Integer:
		return int32(r.Int32() - r.Int32())
	case stream.Boolean:
		return r.IntN(2) == 0
	case stream.Date, stream.Month, stream.Timestamptz:
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)/1000*1000).UTC()
	case stream.JSONB:
		b, _ := json.Marshal(map[string]any{"k": text(), "n": r.IntN(100), "a": []any{nil, true}})
		return json.RawMessage(b)
	}
	return nil
}

// TestBatchJSONMatchesPlainEncoder: random batches of every declared table,
// encoded by the appending encoder and by the plain one, decode to the same
// JSON value, and the appending encoder's output reads back to the batch.
func TestBatchJSONMatchesPlainEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var b Batch
		b.Tables = map[string]*TableRows{}
		for _, tb := range stream.Tables() {
			if r.IntN(3) == 0 {
				continue
			}
			tr := &TableRows{Table: tb}
			for range r.IntN(4) {
				row := make([]any, len(tb.Columns))
				for i, c := range tb.Columns {
					row[i] = randomValue(r, c.Type)
				}
				tr.Rows = append(tr.Rows, row)
			}
			if r.IntN(2) == 0 {
				tr.Parents = append(tr.Parents, randomValue(r, tb.Columns[0].Type))
			}
			b.Tables[tb.Name] = tr
		}
		if r.IntN(2) == 0 {
			b.Rejects = []Reject{{Stream: "communications", Key: "7", Payload: json.RawMessage(`{"id":7}`), Error: "no \"subject\""}}
		}
		got, err := b.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, err := marshalPlain(b)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("round %d: the appending encoder wrote invalid JSON: %v\n%s", round, err, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("round %d: encoders differ\nappending %s\nplain     %s", round, got, want)
		}
		var back Batch
		if err := back.UnmarshalJSON(got); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		again, err := back.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var a any
		if err := json.Unmarshal(again, &a); err != nil || !reflect.DeepEqual(a, g) {
			t.Fatalf("round %d: a round trip changed the batch (%v)", round, err)
		}
	}
}

// TestBatchJSONChecksJSONNotFromRecords: a JSON value read from a field
// (brands.general_info) is checked before it is written; the record as
// received (a DerivedRecord column) is valid by construction and written as
// it is.
func TestBatchJSONChecksJSONNotFromRecords(t *testing.T) {
	tb, _, ok := stream.LookupTable("brands")
	if !ok {
		t.Fatal("no brands table")
	}
	row := func(col string, v any) Batch {
		r := make([]any, len(tb.Columns))
		r[columnIndex(tb, col)] = v
		return Batch{Tables: map[string]*TableRows{tb.Name: {Table: tb, Rows: [][]any{r}}}}
	}
	if _, err := row("general_info", json.RawMessage(`{"a":`)).AppendJSON(nil); err == nil || !strings.Contains(err.Error(), "brands.general_info") {
		t.Errorf("invalid general_info: err = %v, want one naming brands.general_info", err)
	}
	got, err := row("raw", json.RawMessage(`{"id":"7"}`)).AppendJSON(nil)
	if err != nil || !strings.Contains(string(got), `{"j":{"id":"7"}}`) {
		t.Errorf("raw: %s, %v", got, err)
	}
}
