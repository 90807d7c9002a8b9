package spool

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

type item struct {
	N     int
	Raw   json.RawMessage
	Rows  []row
	Inner *row
}

type row struct {
	ID  string
	Raw json.RawMessage
}

// AppendJSON spools an item as encoding/json writes it.
func (it item) AppendJSON(buf []byte) ([]byte, error) {
	b, err := json.Marshal(it)
	return append(buf, b...), err
}

// failing is a value whose encoding fails.
type failing struct{}

func (failing) AppendJSON([]byte) ([]byte, error) { return nil, errors.New("no encoding") }

// TestDir: values come back as they were put, nil raw JSON included (a
// JSON round trip makes it null); dropped and damaged files are gone; the
// folder is private, and stale or half-written files go when it is prepared.
func TestDir(t *testing.T) {
	t.Parallel()
	if Open("", nil).Prepare() != nil {
		t.Fatal(`Open("") is a spool`)
	}
	dir := filepath.Join(t.TempDir(), "spool")
	d := Open(dir, nil).Prepare()
	if d == nil {
		t.Fatal("no spool in a fresh folder")
	}
	for _, in := range []item{
		{N: 1, Rows: []row{{ID: "a"}, {ID: "b", Raw: json.RawMessage(`{"x":[1,null]}`)}}, Inner: &row{ID: "c"}},
		{N: 2, Raw: json.RawMessage(`{}`), Rows: []row{}, Inner: &row{Raw: json.RawMessage(`"s"`)}},
		{},
	} {
		k := Key("communications", "agency", "2026-11-01", string(rune('0'+in.N)))
		d.Put(k, in)
		var out item
		if !d.Get(k, &out) || !reflect.DeepEqual(in, out) {
			t.Errorf("round trip: put %+v, got %+v", in, out)
		}
	}
	if Key("a", "bc") == Key("ab", "c") {
		t.Error("keys of different parts collide")
	}
	k := Key("detail", "agency", "projects", "42", "h1")
	d.Put(k, item{N: 42})
	want, _ := json.Marshal(item{N: 42})
	if got, err := os.ReadFile(d.path(k)); err != nil || string(got) != string(want) {
		t.Errorf("file holds %q (%v), want the appended bytes %q", got, err, want)
	}
	d.Drop(k)
	if d.Get(k, &item{}) {
		t.Error("a dropped item was found")
	}
	d.Put(k, failing{})
	if entries, _ := os.ReadDir(dir); d.Get(k, &item{}) || len(entries) != 3 {
		t.Errorf("a value that could not be encoded left a file: %d files, want the 3 of the round trips", len(entries))
	}
	d.Put(k, item{N: 42})
	if err := os.WriteFile(d.path(k), []byte("not JSON"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d.Get(k, &item{}) {
		t.Error("a damaged file was read")
	}
	if _, err := os.Stat(d.path(k)); !os.IsNotExist(err) {
		t.Errorf("the damaged file is still there: %v", err)
	}
	d.Put(k, item{N: 42})
	if fi, err := os.Stat(d.path(k)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	old := time.Now().Add(-MaxAge - time.Hour)
	if err := os.Chtimes(d.path(k), old, old); err != nil {
		t.Fatal(err)
	}
	half := filepath.Join(dir, ".tmp-1")
	if err := os.WriteFile(half, []byte(`{"N":`), 0o600); err != nil {
		t.Fatal(err)
	}
	d = Open(dir, nil).Prepare()
	if d.Get(k, &item{}) {
		t.Error("a file older than MaxAge survived Prepare")
	}
	if _, err := os.Stat(half); !os.IsNotExist(err) {
		t.Errorf("a half-written file survived Prepare: %v", err)
	}
	d.Tidy()
	if _, err := os.Stat(dir); err == nil {
		// Items from the round trips are still spooled: the folder stays.
		entries, _ := os.ReadDir(dir)
		if len(entries) == 0 {
			t.Error("Tidy left an empty folder")
		}
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if Open(open, nil).Prepare() != nil {
		t.Error("a spool in a folder of mode 0755")
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if Open(empty, nil).Prepare() == nil {
		t.Fatal("no spool in a fresh folder")
	}
	Open(empty, nil).Tidy()
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("Tidy kept an empty folder: %v", err)
	}
}
