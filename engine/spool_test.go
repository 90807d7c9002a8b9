package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/spool"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func TestPageSpool(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	if openSpool("", "s", zap.NewNop()).prepare() != nil {
		t.Fatal("a spool without a folder")
	}
	sp := openSpool(dir, "s", zap.NewNop()).prepare()
	set := Settings{Mail: MailSettings{DomainID: 1, UserIDs: []int64{1, 2}, WithMessage: "0"}}
	rk := sp.pageKey("communications", set, "2024-01-01", "2024-01-31", 3)
	p := &spooledPage{Number: 3, PerPage: 1000, Total: 2500, LastPage: 3, Rows: 500,
		Batch: tableBatch("emails", []any{int64(7), nil, nil, nil, nil, "Q3 plan", nil, false, nil, nil, nil,
			time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC), json.RawMessage(`{}`)})}
	p.Batch.Rejects = []transform.Reject{{Stream: "communications", Key: "8", Payload: []byte(`{"id":8}`), Error: "bad date"}}
	sp.put(rk, p)

	got := &spooledPage{}
	ok := sp.get(rk, got)
	if !ok || got.Number != 3 || got.LastPage != 3 || got.Rows != 500 || got.Batch.Len("emails") != 1 ||
		!got.Batch.Column("emails", "email_at")[0].(time.Time).Equal(p.Batch.Column("emails", "email_at")[0].(time.Time)) ||
		string(got.Batch.Rejects[0].Payload) != `{"id":8}` {
		t.Fatalf("spooled page back: %+v, %v", got, ok)
	}
	// Another page, another range or another schema finds nothing.
	other := set
	other.Mail.UserIDs = []int64{1}
	t2 := openSpool(dir, "t", zap.NewNop()).prepare()
	for name, k := range map[string]string{
		"page 2":       sp.pageKey("communications", set, "2024-01-01", "2024-01-31", 2),
		"other users":  sp.pageKey("communications", other, "2024-01-01", "2024-01-31", 3),
		"other dates":  sp.pageKey("communications", set, "2024-01-01", "2024-02-29", 3),
		"other schema": t2.pageKey("communications", set, "2024-01-01", "2024-01-31", 3),
		"a detail":     sp.detailKey("brands", "3", "h", "brand"),
	} {
		if sp.get(k, &spooledPage{}) {
			t.Errorf("%s: found the spooled page", name)
		}
	}
	// An entity's answer, keyed by its list entry's hash and its endpoint.
	team := tableBatch("project_team_members")
	team.Tables["project_team_members"].Parents = []any{"42"}
	sp.put(sp.detailKey("projects", "42", "h1", "project"), &spooledDetail{Child: &childList{Endpoint: "brand_contacts", Short: true}, Missing: true, Rejected: true, Batch: team})
	var d spooledDetail
	if !sp.get(sp.detailKey("projects", "42", "h1", "project"), &d) || d.Child == nil || !d.Child.Short || !d.Missing || !d.Rejected ||
		len(d.Batch.Rows("project_team_members").Parents) != 1 ||
		sp.get(sp.detailKey("projects", "42", "h2", "project"), &d) || sp.get(sp.detailKey("projects", "42", "h1", "brand_contacts"), &d) {
		t.Errorf("detail back: %+v", d)
	}
	sp.drop(sp.detailKey("projects", "42", "h1", "project"))
	// Private: the folder 0700, the files 0600.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("spool holds %d files, want 1", len(entries))
	}
	fi, _ := entries[0].Info()
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 || fi.Mode().Perm() != 0o600 {
		t.Errorf("folder %v, file %v; want 0700 and 0600", di.Mode().Perm(), fi.Mode().Perm())
	}
	// A damaged file is dropped, and the page fetched again.
	name := filepath.Join(dir, entries[0].Name())
	if err := os.WriteFile(name, []byte("not JSON"), 0o600); err != nil {
		t.Fatal(err)
	}
	if sp.get(rk, &spooledPage{}) {
		t.Error("a damaged file was read")
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("the damaged file is still there: %v", err)
	}
	// Committed pages are dropped; stale files go when a spool opens.
	sp.put(rk, p)
	sp.drop(rk)
	if sp.get(rk, &spooledPage{}) {
		t.Error("a dropped page was found")
	}
	sp.put(rk, p)
	old := time.Now().Add(-spool.MaxAge - time.Hour)
	entries, _ = os.ReadDir(dir)
	if err := os.Chtimes(filepath.Join(dir, entries[0].Name()), old, old); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, ".tmp-123")
	if err := os.WriteFile(half, []byte(`{"Number":`), 0o600); err != nil {
		t.Fatal(err)
	}
	sp = openSpool(dir, "s", zap.NewNop()).prepare()
	if sp.get(rk, &spooledPage{}) {
		t.Error("a file older than a day survived opening the spool")
	}
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Errorf("a half-written file survived opening the spool: %v", err)
	}
	// A folder open to others (someone else's, in a shared /tmp) is not used.
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if openSpool(open, "s", zap.NewNop()).prepare() != nil {
		t.Error("a spool in a folder of mode 0755")
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if openSpool(link, "s", zap.NewNop()).prepare() != nil {
		t.Error("a spool through a symbolic link")
	}
	// An unusable folder disables the spool.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if openSpool(filepath.Join(blocker, "spool"), "s", zap.NewNop()).prepare() != nil {
		t.Error("a spool under a file")
	}
}

// tableBatch is a batch of rows of one table.
func tableBatch(table string, rows ...[]any) transform.Batch {
	tb, _, ok := stream.LookupTable(table)
	if !ok {
		panic("no table " + table)
	}
	return transform.Batch{Tables: map[string]*transform.TableRows{table: {Table: tb, Rows: rows}}}
}

// fillBatch gives a batch a row of every declared table, the same way for a
// given mode: 0 every value NULL, 1 zero values and the smallest JSON, 2
// ordinary values; child tables name their parents.
func fillBatch(mode int) transform.Batch {
	b := transform.Batch{Tables: map[string]*transform.TableRows{}}
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	for _, tb := range stream.Tables() {
		row := make([]any, len(tb.Columns))
		for i, c := range tb.Columns {
			if mode == 0 {
				continue
			}
			switch c.Type {
			case stream.Text, stream.ID:
				row[i] = []string{"", "", "Ana \u00e9 \"q\""}[mode]
			case stream.Numeric:
				row[i] = []string{"", "0", "12345678901234567890.125"}[mode]
			case stream.BigInt:
				row[i] = int64(mode * 7)
			case stream.Integer:
				row[i] = int32(mode * 7)
			case stream.Boolean:
				row[i] = mode == 2
			case stream.Date, stream.Month, stream.Timestamptz:
				row[i] = at
			case stream.JSONB:
				row[i] = json.RawMessage([]string{"", `{}`, `{"a":[1,"x"],"n":null}`}[mode])
			}
		}
		tr := &transform.TableRows{Table: tb, Rows: [][]any{row}}
		if tb.Replace {
			tr.Parents = []any{row[0]}
		}
		b.Tables[tb.Name] = tr
	}
	b.Rejects = []transform.Reject{{Stream: "communications", Key: "8", Payload: []byte(`{"id":8}`), Error: "bad date"}}
	return b
}

// TestSpoolRoundTripIsExact: a spooled batch comes back equal, nil pointers
// and pointers to zero values, nil and present raw JSON alike (they are NULL
// and ” or 0 in the warehouse).
func TestSpoolRoundTripIsExact(t *testing.T) {
	sp := openSpool(filepath.Join(t.TempDir(), "spool"), "s", zap.NewNop()).prepare()
	for mode := range 3 {
		in := &spooledPage{Number: 1, PerPage: 1000, Total: 1, LastPage: 1, Rows: 1, Batch: fillBatch(mode)}
		sp.put("k", in)
		out := &spooledPage{}
		if !sp.get("k", out) {
			t.Fatalf("mode %d: not read back", mode)
		}
		if !reflect.DeepEqual(in, out) {
			a, _ := json.Marshal(in)
			b, _ := json.Marshal(out)
			t.Errorf("mode %d: round trip changed the batch\n in %s\nout %s", mode, a, b)
		}
		d := &spooledDetail{Batch: fillBatch(mode), Child: &childList{Endpoint: "brand_contacts", Short: mode == 1}, Missing: mode == 2}
		sp.put("d", d)
		dout := &spooledDetail{}
		if !sp.get("d", dout) || !reflect.DeepEqual(d, dout) {
			t.Errorf("mode %d: detail round trip changed the batch", mode)
		}
	}
}

// TestSpooledBytesMatchEncodingJSON: what the spool writes for a page or a
// detail (their appenders) decodes to the same JSON value as what
// encoding/json writes for them (what the spool wrote before: the oracle,
// which also covers every field a later change adds).
func TestSpooledBytesMatchEncodingJSON(t *testing.T) {
	var values []spool.Appender
	for mode := range 3 {
		b := fillBatch(mode)
		if mode == 2 {
			b.Coverage = transform.Coverage{Rows: map[string]int{"emails": 1}, Nulls: map[string]int{"emails.subject": 0}}
		}
		values = append(values,
			&spooledPage{Number: 1, PerPage: 1000, Total: 1, LastPage: 1, Rows: 1, Batch: b},
			&spooledPage{Number: 2, PerPage: 50, Total: 120, LastPage: 3, Rows: 50, Paged: true, IDs: []int64{},
				Batch: b},
			&spooledPage{Number: 3, PerPage: 50, Total: -1, LastPage: 3, Rows: 20, Paged: mode == 1,
				IDs: []int64{9, 1 << 62, 3}, FirstID: 3, LastID: 1 << 62, HasIDs: true, Batch: b},
			&spooledDetail{Batch: b, Child: &childList{Endpoint: "brand_contacts", Short: mode == 2}},
			&spooledDetail{Batch: b, Child: &childList{Endpoint: "brand_contacts", End: &extract.ListEnd{Proven: mode == 0, Reason: "the \"page\" parameter",
				Suggest: "offset", Cap: mode, Rows: 3}}},
			&spooledDetail{Batch: b, Missing: true, Rejected: mode == 1},
			&spooledDetail{})
	}
	for i, v := range values {
		got, err := v.AppendJSON([]byte("prefix"))
		if err != nil || string(got[:len("prefix")]) != "prefix" {
			t.Fatalf("value %d: %v (or the buffer's start changed)", i, err)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := canonicalJSON(t, got[len("prefix"):]), canonicalJSON(t, want); g != w {
			t.Errorf("value %d: the appender and encoding/json differ\nappender %s\n    json %s", i, g, w)
		}
	}
}

// canonicalJSON is the value of the JSON text b written again with object
// members sorted by key and numbers as they were (not through float64).
func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		t.Fatalf("not one JSON value (%v):\n%s", err, b)
	}
	c, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(c)
}
