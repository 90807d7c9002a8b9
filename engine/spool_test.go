package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/spool"
	"github.com/agencysync/agencysync/transform"
)

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func TestPageSpool(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	if openSpool("", "s", zap.NewNop()).prepare() != nil {
		t.Fatal("a spool without a folder")
	}
	sp := openSpool(dir, "s", zap.NewNop()).prepare()
	set := Settings{DomainID: 1, UserIDs: []int64{1, 2}, WithMessage: "0"}
	rk := sp.pageKey(set, "2024-01-01", "2024-01-31", 3)
	p := &spooledPage{Number: 3, PerPage: 1000, Total: 2500, LastPage: 3, Rows: 500,
		Batch: transform.Batch{Emails: []transform.Email{{RecordID: 7, Subject: "Q3 plan", EmailAt: time.Date(2024, 1, 2, 3, 4, 5, 6000, time.UTC)}},
			Rejects: []transform.Reject{{Stream: "communications", Key: "8", Payload: []byte(`{"id":8}`), Error: "bad date"}}}}
	sp.put(rk, p)

	got := &spooledPage{}
	ok := sp.get(rk, got)
	if !ok || got.Number != 3 || got.LastPage != 3 || got.Rows != 500 || len(got.Batch.Emails) != 1 ||
		!got.Batch.Emails[0].EmailAt.Equal(p.Batch.Emails[0].EmailAt) || string(got.Batch.Rejects[0].Payload) != `{"id":8}` {
		t.Fatalf("spooled page back: %+v, %v", got, ok)
	}
	// Another page, another range or another schema finds nothing.
	other := set
	other.UserIDs = []int64{1}
	t2 := openSpool(dir, "t", zap.NewNop()).prepare()
	for name, k := range map[string]string{
		"page 2":       sp.pageKey(set, "2024-01-01", "2024-01-31", 2),
		"other users":  sp.pageKey(other, "2024-01-01", "2024-01-31", 3),
		"other dates":  sp.pageKey(set, "2024-01-01", "2024-02-29", 3),
		"other schema": t2.pageKey(set, "2024-01-01", "2024-01-31", 3),
		"a detail":     sp.detailKey("brands", "3", "h"),
	} {
		if sp.get(k, &spooledPage{}) {
			t.Errorf("%s: found the spooled page", name)
		}
	}
	// A detail, keyed by its list entry's hash.
	sp.put(sp.detailKey("projects", "42", "h1"), &spooledDetail{Contacts: true, Batch: transform.Batch{ProjectDetails: []string{"42"}}})
	var d spooledDetail
	if !sp.get(sp.detailKey("projects", "42", "h1"), &d) || !d.Contacts || len(d.Batch.ProjectDetails) != 1 || sp.get(sp.detailKey("projects", "42", "h2"), &d) {
		t.Errorf("detail back: %+v", d)
	}
	sp.drop(sp.detailKey("projects", "42", "h1"))
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

// fillBatch sets every field of every row type of a batch, the same way for
// a given mode: 0 nil pointers and nil raw JSON, 1 pointers to zero values
// and the smallest JSON, 2 ordinary values.
func fillBatch(mode int) transform.Batch {
	var b transform.Batch
	bv := reflect.ValueOf(&b).Elem()
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	var fill func(v reflect.Value)
	fill = func(v reflect.Value) {
		switch {
		case v.Type() == rawMessageType:
			v.Set(reflect.ValueOf(json.RawMessage([]string{"", `{}`, `{"a":[1,"x"],"n":null}`}[mode])))
			if mode == 0 {
				v.SetZero()
			}
		case v.Type() == reflect.TypeFor[time.Time]():
			v.Set(reflect.ValueOf(at))
		case v.Kind() == reflect.Pointer:
			if mode == 0 {
				return
			}
			p := reflect.New(v.Type().Elem())
			if mode == 2 {
				fill(p.Elem())
			} else if p.Elem().Type() == reflect.TypeFor[time.Time]() {
				p.Elem().Set(reflect.ValueOf(time.Time{}))
			}
			v.Set(p)
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				fill(v.Field(i))
			}
		case v.Kind() == reflect.String:
			v.SetString([]string{"", "", "Ana \u00e9 \"q\""}[mode])
		case v.Kind() == reflect.Int64 || v.Kind() == reflect.Int32 || v.Kind() == reflect.Int:
			v.SetInt(int64(mode * 7))
		case v.Kind() == reflect.Bool:
			v.SetBool(mode == 2)
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
			v.Set(reflect.ValueOf([]string{"a", ""}))
		}
	}
	for i := range bv.NumField() {
		f := bv.Field(i)
		row := reflect.New(f.Type().Elem()).Elem()
		fill(row)
		f.Set(reflect.Append(f, row))
	}
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
		d := &spooledDetail{Batch: fillBatch(mode), Contacts: true}
		sp.put("d", d)
		dout := &spooledDetail{}
		if !sp.get("d", dout) || !reflect.DeepEqual(d, dout) {
			t.Errorf("mode %d: detail round trip changed the batch", mode)
		}
	}
}
