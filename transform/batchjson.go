package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/agencysync/agencysync/stream"
)

// batchJSON is a Batch as JSON. Row values are written by their column's
// type (instants as RFC 3339 text, integers as numbers, JSON as itself) and
// read back by it, so a Batch survives a round trip with the Go types of
// its values — what the page spool needs.
type batchJSON struct {
	Tables   map[string]tableJSON `json:"tables,omitempty"`
	Rejects  []Reject             `json:"rejects,omitempty"`
	Coverage Coverage             `json:"coverage"`
}

type tableJSON struct {
	Rows    [][]json.RawMessage `json:"rows"`
	Parents []json.RawMessage   `json:"parents,omitempty"`
}

// MarshalJSON encodes b with its values typed by their columns.
func (b Batch) MarshalJSON() ([]byte, error) {
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
				return nil, fmt.Errorf("encode %s parent: %w", name, err)
			}
			tj.Parents = append(tj.Parents, e)
		}
		out.Tables[name] = tj
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes what MarshalJSON wrote; tables are those of the
// stream declarations.
func (b *Batch) UnmarshalJSON(data []byte) error {
	var in batchJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("decode batch: %w", err)
	}
	*b = Batch{Rejects: in.Rejects, Coverage: in.Coverage}
	for name, tj := range in.Tables {
		t, _, ok := stream.LookupTable(name)
		if !ok {
			return fmt.Errorf("decode batch: no table %s", name)
		}
		tr := b.table(t)
		for _, r := range tj.Rows {
			if len(r) != len(t.Columns) {
				return fmt.Errorf("decode batch: %s row of %d values, want %d", name, len(r), len(t.Columns))
			}
			row := make([]any, len(r))
			for i, e := range r {
				v, err := decodeValue(t.Columns[i].Type, e)
				if err != nil {
					return fmt.Errorf("decode batch: %s.%s: %w", name, t.Columns[i].Name, err)
				}
				row[i] = v
			}
			tr.Rows = append(tr.Rows, row)
		}
		for _, e := range tj.Parents {
			v, err := decodeValue(t.Columns[0].Type, e)
			if err != nil {
				return fmt.Errorf("decode batch: %s parent: %w", name, err)
			}
			tr.Parents = append(tr.Parents, v)
		}
	}
	return nil
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

func decodeValue(typ stream.Type, e json.RawMessage) (any, error) {
	if bytes.Equal(bytes.TrimSpace(e), []byte("null")) {
		return nil, nil
	}
	switch typ {
	case stream.Text, stream.ID, stream.Numeric:
		var s string
		err := json.Unmarshal(e, &s)
		return s, err
	case stream.BigInt:
		return strconv.ParseInt(string(e), 10, 64)
	case stream.Integer:
		n, err := strconv.ParseInt(string(e), 10, 32)
		return int32(n), err
	case stream.Boolean:
		var x bool
		err := json.Unmarshal(e, &x)
		return x, err
	case stream.Date, stream.Month, stream.Timestamptz:
		var s string
		if err := json.Unmarshal(e, &s); err != nil {
			return nil, err
		}
		return time.Parse(time.RFC3339Nano, s)
	case stream.JSONB:
		var w struct {
			J json.RawMessage `json:"j"`
		}
		err := json.Unmarshal(e, &w)
		return w.J, err
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}
