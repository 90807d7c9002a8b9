package stream_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/stream"
)

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// Every tolerated variant of api-assumptions.md reads as the canonical value.
func TestCoerceVariants(t *testing.T) {
	text := stream.Column{Name: "name", Type: stream.Text}
	trim := stream.Column{Name: "full_name", Type: stream.Text, Trim: true}
	keep := stream.Column{Name: "subject", Type: stream.Text, KeepEmpty: true}
	anyJSON := stream.Column{Name: "to_value", Type: stream.Text, KeepEmpty: true, AnyJSON: true}
	id := stream.Column{Name: "brand_id", Type: stream.ID}
	big := stream.Column{Name: "size_bytes", Type: stream.BigInt, NonNegative: true}
	dec := stream.Column{Name: "amount", Type: stream.Numeric}
	date := stream.Column{Name: "due_date", Type: stream.Date}
	month := stream.Column{Name: "period", Type: stream.Month}
	inst := stream.Column{Name: "email_at", Type: stream.Timestamptz}
	flag := stream.Column{Name: "has_attachments", Type: stream.Boolean}
	level := stream.Column{Name: "level", Type: stream.Text, OneOf: []string{"project", "brand"}}
	js := stream.Column{Name: "metadata", Type: stream.JSONB}
	declared, ok := stream.LookupColumn("brands", "general_info")
	if !ok {
		t.Fatal("no brands.general_info")
	}
	obj := *declared

	tests := []struct {
		name    string
		col     stream.Column
		json    string // the value; "" for a missing field
		want    any
		wantErr bool
	}{
		{"text", text, `"Acme"`, "Acme", false},
		{"text number", text, `42`, "42", false},
		{"text empty is NULL", text, `""`, nil, false},
		{"text false is NULL", text, `false`, nil, false},
		{"text null", text, `null`, nil, false},
		{"text missing", text, ``, nil, false},
		{"text [] is NULL", text, `[]`, nil, false},
		{"text NUL cleaned", text, `"a\u0000b"`, "a\uFFFDb", false},
		{"text object refused", text, `{"a":1}`, nil, true},
		{"text true refused", text, `true`, nil, true},
		{"trimmed trailing space", trim, `"Ada Lovelace "`, "Ada Lovelace", false},
		{"trimmed all space is NULL", trim, `"  "`, nil, false},
		{"kept empty", keep, `""`, "", false},
		{"any JSON object as text", anyJSON, `{"a": 1}`, `{"a":1}`, false},
		{"any JSON bool", anyJSON, `true`, "true", false},
		{"id string", id, `"42"`, "42", false},
		{"id number", id, `42`, "42", false},
		{"id trimmed", id, `" b-7 "`, "b-7", false},
		{"id float refused", id, `4.2`, nil, true},
		{"id false", id, `false`, nil, false},
		{"bigint", big, `1024`, int64(1024), false},
		{"bigint string", big, `"1024"`, int64(1024), false},
		{"bigint negative refused", big, `-1`, nil, true},
		{"bigint overflow refused", big, `99999999999999999999`, nil, true},
		{"bigint float refused", big, `1.5`, nil, true},
		{"decimal number text kept", dec, `1250.50`, "1250.50", false},
		{"decimal string", dec, `"1000.50"`, "1000.50", false},
		{"decimal string plus and space", dec, `" +7.25 "`, "7.25", false},
		{"decimal exponent", dec, `1.5e3`, "1500", false},
		{"decimal beyond float64", dec, `12345678901234567890.123456789`, "12345678901234567890.123456789", false},
		{"decimal negative zero", dec, `-0.00`, "0.00", false},
		{"decimal leading zeros", dec, `"007.5"`, "7.5", false},
		{"decimal trailing point", dec, `"5."`, "5", false},
		{"decimal garbage refused", dec, `"12abc"`, nil, true},
		{"decimal false", dec, `false`, nil, false},
		{"date", date, `"2026-03-01"`, day(2026, 3, 1), false},
		{"date zero is NULL", date, `"0000-00-00"`, nil, false},
		{"date invalid refused", date, `"2026-02-30"`, nil, true},
		// A date cast serialised as a timestamp at midnight UTC (Laravel's
		// toJSON, or a SQL datetime): its date.
		{"date as Laravel midnight", date, `"2025-12-27T00:00:00.000000Z"`, day(2025, 12, 27), false},
		{"date as SQL midnight", date, `"2025-12-27 00:00:00"`, day(2025, 12, 27), false},
		{"date as midnight with fraction", date, `"2025-12-27 00:00:00.000"`, day(2025, 12, 27), false},
		{"date as midnight Z", date, `"2025-12-27T00:00:00Z"`, day(2025, 12, 27), false},
		{"date as midnight +00:00", date, `"2025-12-27T00:00:00+00:00"`, day(2025, 12, 27), false},
		{"date as midnight leap day", date, `"2024-02-29T00:00:00.000000Z"`, day(2024, 2, 29), false},
		{"date zero datetime is NULL", date, `"0000-00-00 00:00:00"`, nil, false},
		// Any other time of day names a different date in another zone.
		{"date with a time of day refused", date, `"2025-12-27T10:30:00.000000Z"`, nil, true},
		{"date as another zone's midnight refused", date, `"2025-12-27T00:00:00+02:00"`, nil, true},
		{"date as UTC of a local midnight refused", date, `"2025-12-26T22:00:00.000000Z"`, nil, true},
		{"date a microsecond past midnight refused", date, `"2025-12-27T00:00:00.000001Z"`, nil, true},
		{"date with an invalid day and midnight refused", date, `"2025-02-30T00:00:00Z"`, nil, true},
		{"date with an hour 24 refused", date, `"2025-12-26T24:00:00Z"`, nil, true},
		{"month", month, `"2026-03"`, day(2026, 3, 1), false},
		{"month refused", month, `"March"`, nil, true},
		{"instant micro kept", inst, `"2026-03-01T10:11:12.123456Z"`, time.Date(2026, 3, 1, 10, 11, 12, 123456000, time.UTC), false},
		{"instant offset to UTC", inst, `"2026-03-01 10:11:12+02:00"`, time.Date(2026, 3, 1, 8, 11, 12, 0, time.UTC), false},
		{"instant nanos truncated", inst, `"2026-03-01T10:11:12.1234567Z"`, time.Date(2026, 3, 1, 10, 11, 12, 123456000, time.UTC), false},
		{"instant bare date", inst, `"2026-03-01"`, day(2026, 3, 1), false},
		{"instant refused", inst, `"yesterday"`, nil, true},
		{"bool 1", flag, `1`, true, false},
		{"bool null", flag, `null`, false, false},
		{"bool missing", flag, ``, false, false},
		{"bool string 1", flag, `"1"`, true, false},
		{"bool 0", flag, `0`, false, false},
		{"bool true", flag, `true`, true, false},
		{"bool odd string refused", flag, `"maybe"`, nil, true},
		{"one of", level, `"brand"`, "brand", false},
		{"one of refused", level, `"agency"`, nil, true},
		{"json as received", js, `{"tier": "gold"}`, json.RawMessage(`{"tier": "gold"}`), false},
		{"json [] is NULL where no object is declared", js, `[]`, nil, false},
		{"json array as received", js, `[1, 2]`, json.RawMessage(`[1, 2]`), false},
		// general_info holds an object: a PHP encoder's [] is its empty object.
		{"object {} as received", obj, `{}`, json.RawMessage(`{}`), false},
		{"object [] is {}", obj, `[]`, json.RawMessage(`{}`), false},
		{"object [ ] is {}", obj, "[ \n ]", json.RawMessage(`{}`), false},
		{"object null", obj, `null`, nil, false},
		{"object false", obj, `false`, nil, false},
		{"object missing", obj, ``, nil, false},
		{"object as received", obj, `{"cui": "RO123"}`, json.RawMessage(`{"cui": "RO123"}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gjson.Get(`{"v":`+tt.json+`}`, "v")
			if tt.json == "" {
				r = gjson.Get(`{}`, "v")
			}
			got, err := tt.col.Coerce(r, tt.col.Name)
			if tt.wantErr {
				if !errors.Is(err, stream.ErrValue) {
					t.Fatalf("Coerce(%s) = %v, %v; want an ErrValue", tt.json, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Coerce(%s): %v", tt.json, err)
			}
			if !equal(got, tt.want) {
				t.Fatalf("Coerce(%s) = %#v, want %#v", tt.json, got, tt.want)
			}
		})
	}
}

// A date column refuses a timestamp at any other time than midnight UTC
// with a reason that names the value's form: its date depends on the zone.
func TestDateRefusalNamesTheForm(t *testing.T) {
	date := stream.Column{Name: "date_created", Type: stream.Date}
	for _, tt := range []struct{ value, want string }{
		{"2025-12-27T10:30:00.000000Z", `date_created: want a date YYYY-MM-DD, got the timestamp "2025-12-27T10:30:00.000000Z"`},
		{"2025-12-27T00:00:00+02:00", `got the timestamp "2025-12-27T00:00:00+02:00"`},
		{"2025-12-26 22:00:00", `got the timestamp "2025-12-26 22:00:00"`},
		{"27.12.2025", `date_created: want a date YYYY-MM-DD, got "27.12.2025"`},
		{"2025-12-27T00:00", `date_created: want a date YYYY-MM-DD, got "2025-12-27T00:00"`},
	} {
		_, err := date.Coerce(gjson.Parse(`"`+tt.value+`"`), date.Name)
		if !errors.Is(err, stream.ErrValue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Coerce(%q): %v, want an ErrValue saying %s", tt.value, err, tt.want)
		}
		if strings.Contains(tt.want, "timestamp") && !strings.Contains(err.Error(), "midnight UTC") {
			t.Errorf("Coerce(%q): %v does not say which timestamps a date takes", tt.value, err)
		}
	}
}

func equal(a, b any) bool {
	switch x := a.(type) {
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y) && x.Location() == time.UTC
	case json.RawMessage:
		y, ok := b.(json.RawMessage)
		return ok && string(x) == string(y)
	}
	return a == b
}

func TestKeyLength(t *testing.T) {
	long := make([]byte, stream.MaxKeyBytes+1)
	for i := range long {
		long[i] = 'x'
	}
	c := stream.Column{Name: "brand_id", Type: stream.ID}
	if _, err := c.Coerce(gjson.Parse(`"`+string(long)+`"`), "id"); !errors.Is(err, stream.ErrValue) {
		t.Fatalf("over-long id: err = %v", err)
	}
	plain := stream.Column{Name: "name", Type: stream.Text}
	if v, err := plain.Coerce(gjson.Parse(`"`+string(long)+`"`), "name"); err != nil || v == nil {
		t.Fatalf("over-long unindexed text: %v %v", v, err)
	}
}

// A record's fields are read through its wrappers: the table's own wrapper
// anywhere, a "<thing>_info" object first; a declared field ending in _info
// is not a wrapper.
func TestViewWrappers(t *testing.T) {
	brands, _, _ := stream.LookupTable("brands")
	tests := []struct {
		name, raw, path, want string
	}{
		{"bare", `{"id": 7, "name": "Acme"}`, "name", "Acme"},
		{"wrapped", `{"brand_info": {"id": 7, "name": "Acme"}}`, "name", "Acme"},
		{"other first wrapper", `{"record_info": {"name": "Acme"}}`, "name", "Acme"},
		{"detail", `{"brand_info": {"id": 7, "name": "Acme"}, "general_info": {"tier": "gold"}}`, "general_info.tier", "gold"},
		{"general_info first is a field", `{"general_info": {"name": "not the brand"}, "brand_info": {"name": "Acme"}}`, "name", "Acme"},
		{"nested", `{"financial_summary": {"invoiced": "10.50"}}`, "financial_summary.invoiced", "10.50"},
		{"last wins", `{"name": "old", "brand_info": {"name": "new"}}`, "name", "new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := stream.NewView([]byte(tt.raw), brands)
			got, ok := v.Get(tt.path)
			if !ok || got.String() != tt.want {
				t.Fatalf("Get(%s) = %q, %v; want %q", tt.path, got.String(), ok, tt.want)
			}
		})
	}
	v := stream.NewView([]byte(`{"general_info": {"name": "x"}}`), brands)
	if _, ok := v.Get("name"); ok {
		t.Fatal("general_info was unwrapped")
	}
}

// BenchmarkCoerceCanonical reads the canonical shapes of the hot columns:
// a date, an instant with microseconds and a jsonb object (the other
// variants are off the common path).
//
//	go test -run '^$' -bench CoerceCanonical -benchmem ./stream/
func BenchmarkCoerceCanonical(b *testing.B) {
	for _, bc := range []struct {
		name string
		col  stream.Column
		json string
	}{
		{"date", stream.Column{Name: "due_date", Type: stream.Date}, `"2026-03-01"`},
		{"instant", stream.Column{Name: "email_at", Type: stream.Timestamptz}, `"2026-03-01T10:11:12.123456Z"`},
		{"jsonb", stream.Column{Name: "general_info", Type: stream.JSONB}, `{"website":"https://dulcetraditie.ro","cui":"RO123"}`},
	} {
		r := gjson.Parse(bc.json)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.col.Coerce(r, bc.col.Name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzCoerceDate: on any text a date column takes exactly a date
// YYYY-MM-DD, or a timestamp (as ParseInstant reads them) written at
// 00:00:00 whose instant is that day's midnight UTC, and stores that day;
// anything else is an ErrValue, never a panic.
func FuzzCoerceDate(f *testing.F) {
	for _, s := range []string{"2025-12-27", "2025-12-27T00:00:00.000000Z", "2025-12-27 00:00:00", "2025-12-27t00:00:00,000z",
		"2025-12-27T00:00:00+0000", "2025-12-27T00:00:00-00:00", "2025-12-27T10:30:00Z", "2025-12-27T00:00:00+02:00",
		"2025-12-26T22:00:00.000000Z", " 2024-02-29 00:00:00 ", "0000-00-00 00:00:00", "2025-12-27T00:00:00.Z", ""} {
		f.Add(s)
	}
	date := stream.Column{Name: "due_date", Type: stream.Date}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := date.Coerce(gjson.Result{Type: gjson.String, Str: s}, date.Name)
		ts := strings.TrimSpace(s)
		want, ok := stream.ParseDate(ts)
		if !ok && len(ts) > 10 {
			in, isInstant := stream.ParseInstant(ts)
			day, _ := stream.ParseDate(ts[:10])
			ok = isInstant && ts[11:19] == "00:00:00" && in.Equal(day)
			want = day
		}
		switch {
		case ts == "" || ts == "0000-00-00" || ts == "0000-00-00 00:00:00":
			if v != nil || err != nil {
				t.Fatalf("Coerce(%q) = %v, %v; want NULL", s, v, err)
			}
		case !ok:
			if !errors.Is(err, stream.ErrValue) {
				t.Fatalf("Coerce(%q) = %v, %v; want an ErrValue", s, v, err)
			}
		default:
			if err != nil || !equal(v, want) {
				t.Fatalf("Coerce(%q) = %v, %v; want %v", s, v, err, want)
			}
		}
	})
}
