package transform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

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

// MarshalJSON encodes b with its values typed by their columns (see
// AppendJSON).
func (b Batch) MarshalJSON() ([]byte, error) {
	return b.AppendJSON(make([]byte, 0, 64<<10))
}

// AppendJSON appends b's JSON encoding (MarshalJSON's) to buf. It appends
// the values to one buffer instead of marshalling each (and then the whole)
// through encoding/json: the page spool writes every communications page's
// batch, and per-value marshalling cost more than the transform itself. A
// caller that writes the bytes itself (the spool) also spares encoding/json's
// re-scan of a MarshalJSON result, which costs about as much as the encoding.
// Its output is compact, valid JSON; text is not HTML-escaped.
func (b Batch) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, '{')
	if len(b.Tables) > 0 {
		buf = append(buf, `"tables":{`...)
		first := true
		for name, tr := range b.Tables {
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = appendJSONString(buf, name)
			buf = append(buf, `:{"rows":`...)
			if len(tr.Rows) == 0 {
				buf = append(buf, "null"...)
			} else {
				buf = append(buf, '[')
			}
			for k, r := range tr.Rows {
				if k > 0 {
					buf = append(buf, ',')
				}
				buf = append(buf, '[')
				for i, v := range r {
					if i > 0 {
						buf = append(buf, ',')
					}
					var err error
					record := i < len(tr.Table.Columns) && tr.Table.Columns[i].Derived == stream.DerivedRecord
					if buf, err = appendValue(buf, v, record); err != nil {
						return nil, fmt.Errorf("encode %s.%s: %w", name, tr.Table.Columns[i].Name, err)
					}
				}
				buf = append(buf, ']')
			}
			if len(tr.Rows) > 0 {
				buf = append(buf, ']')
			}
			if len(tr.Parents) > 0 {
				buf = append(buf, `,"parents":[`...)
				for k, p := range tr.Parents {
					if k > 0 {
						buf = append(buf, ',')
					}
					var err error
					if buf, err = appendValue(buf, p, false); err != nil {
						return nil, fmt.Errorf("encode %s parent: %w", name, err)
					}
				}
				buf = append(buf, ']')
			}
			buf = append(buf, '}')
		}
		buf = append(buf, "},"...)
	}
	if len(b.Rejects) > 0 {
		rej, err := json.Marshal(b.Rejects)
		if err != nil {
			return nil, fmt.Errorf("encode rejects: %w", err)
		}
		buf = append(append(buf, `"rejects":`...), rej...)
		buf = append(buf, ',')
	}
	cov, err := json.Marshal(b.Coverage)
	if err != nil {
		return nil, fmt.Errorf("encode coverage: %w", err)
	}
	buf = append(append(buf, `"coverage":`...), cov...)
	return append(buf, '}'), nil
}

// appendValue appends v, a row value, typed by its column. JSON is checked
// before it is written, but for a record as received (record: a
// DerivedRecord column), which is valid JSON by construction (see
// recordJSON) and the bulk of a page: checking it again cost two thirds of
// the encoding.
func appendValue(buf []byte, v any, record bool) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case json.RawMessage:
		if x == nil {
			return append(buf, "null"...), nil
		}
		if !record && !json.Valid(x) {
			return nil, fmt.Errorf("value %.40q is not JSON", x)
		}
		// Wrapped, so that a stored JSON null stays apart from SQL NULL.
		return append(append(append(buf, `{"j":`...), x...), '}'), nil
	case time.Time:
		buf = append(buf, '"')
		return append(x.AppendFormat(buf, time.RFC3339Nano), '"'), nil
	case string:
		return appendJSONString(buf, x), nil
	case int64:
		return strconv.AppendInt(buf, x, 10), nil
	case int32:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	}
	return nil, fmt.Errorf("value %v of unexpected type %T", v, v)
}

// appendJSONString appends s as a JSON string. Text that is not valid
// UTF-8 goes through encoding/json, which writes it as it would be read back.
func appendJSONString(buf []byte, s string) []byte {
	if !utf8.ValidString(s) {
		e, _ := json.Marshal(s)
		return append(buf, e...)
	}
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	return append(append(buf, s[start:]...), '"')
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
