package load

import (
	"reflect"
	"testing"
	"time"
)

// A rejected record's key parses into its table's key values, by the key's
// declared types, so that a rejected record is not taken for a deleted one.
func TestRejectKeyByDeclaredTypes(t *testing.T) {
	month := time.Date(2024, 11, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		table, key string
		want       []any
		ok         bool
	}{
		{"brands", "42", []any{"42"}, true},
		{"brands", "", nil, false},
		{"brands", "sha256:0123456789abcdef", nil, false},
		{"brand_contacts", "42/c-1", []any{"42", "c-1"}, true},
		{"brand_contacts", "42/c/1", []any{"42", "c/1"}, true},
		{"brand_contacts", "42/", nil, false},
		{"brand_contacts", "42", nil, false},
		{"profitability", "project/7/2024-11", []any{"project", "7", month}, true},
		{"profitability", "brand/a/b/2024-11", []any{"brand", "a/b", month}, true},
		{"profitability", "project/7/November", nil, false},
		{"profitability", "project/2024-11", nil, false},
		{"agency_finance_summary", "2024-11", []any{month}, true},
		{"agency_finance_summary", "2024-13", nil, false},
		{"emails", "2701", []any{int64(2701)}, true},
		{"emails", "x", nil, false},
	}
	for _, tt := range tests {
		got, ok := specByName(t, tt.table).rejectKey(tt.key)
		if ok != tt.ok || (ok && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("%s key %q = %v, %v; want %v, %v", tt.table, tt.key, got, ok, tt.want, tt.ok)
		}
	}
}

// The specs keep what load needs of each declared table.
func TestSpecsDerived(t *testing.T) {
	tests := []struct {
		table      string
		key        []string
		parent     string
		softDelete bool
		recurring  bool
		stream     string
	}{
		{"brands", []string{"brand_id"}, "", true, false, "brands"},
		{"brand_financial_snapshots", []string{"brand_id", "snapshot_date"}, "", false, false, ""},
		{"project_team_members", []string{"project_id", "user_id"}, "project_id", false, false, ""},
		{"project_history", []string{"project_id", "at", "field", "seq"}, "", false, false, ""},
		{"users", []string{"user_key"}, "", false, true, ""},
		{"email_recipients", []string{"record_id", "role", "user_key"}, "record_id", false, false, ""},
		{"profitability", []string{"level", "entity_id", "period"}, "", true, false, "finance.profitability"},
	}
	for _, tt := range tests {
		s := specByName(t, tt.table)
		var key []string
		for _, c := range s.key {
			key = append(key, c.name)
		}
		if !reflect.DeepEqual(key, tt.key) || s.parent != tt.parent || s.softDelete != tt.softDelete ||
			s.recurring != tt.recurring || s.stream != tt.stream {
			t.Errorf("%s: key %v parent %q soft %v recurring %v stream %q", tt.table, key, s.parent, s.softDelete, s.recurring, s.stream)
		}
	}
	raw := specByName(t, "brands").columns()
	for _, c := range raw {
		if c.name == "raw" && (!c.sticky || c.fallback != "detail_raw") {
			t.Errorf("brands.raw: sticky %v fallback %q", c.sticky, c.fallback)
		}
	}
}
