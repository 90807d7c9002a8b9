package sandbox

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/stream"
)

// TestDeclaredBrandListsAreServed: a list per brand that a declaration
// names and the spec lacks is served at its declared path — one or two
// records a brand, each with its id and a value of each field's type —,
// 404 for a brand not listed, counted and written in the truth under its
// inventory name; the product's declarations alone add none.
func TestDeclaredBrandListsAreServed(t *testing.T) {
	t.Parallel()
	s := startSmall(t, nil)
	if r := get(t, s, "/v1/brands/1/tb_notes"); r.status != http.StatusNotFound {
		t.Fatalf("a list no declaration names: %d", r.status)
	}
	paging := stream.StyleDefaults(stream.StylePage)
	decl, err := stream.New(stream.Stream{
		Name: "tb", Main: "tb",
		Endpoints: []stream.Endpoint{
			{Name: "tb", Path: "/v1/brands", Paging: stream.PagingList, Pagination: paging},
			{Name: "tb_notes", Path: "/v1/brands/{id}/tb_notes", Paging: stream.PagingList, Pagination: paging,
				Parent: "tb", Inventory: "scribbles"},
		},
		Lists: []stream.List{{Partition: "list", Endpoint: "tb"}},
	},
		&stream.Table{Name: "tb", Noun: "brand", Endpoints: []string{"tb"}, Reject: "tb", SoftDelete: true,
			DetailFields: []string{"name"},
			Columns: []stream.Column{
				{Name: "brand_id", Field: "id", Type: stream.ID, Key: true},
				{Name: "name", Field: "name", Type: stream.Text},
			}},
		&stream.Table{Name: "tb_notes", Noun: "note", Endpoints: []string{"tb_notes"}, Reject: "tb.notes", SoftDelete: true,
			Columns: []stream.Column{
				{Name: "brand_id", Param: "brand_id", Derived: stream.DerivedParam, Type: stream.ID, Key: true},
				{Name: "note_id", Field: "id", Type: stream.ID, Key: true},
				{Name: "body", Field: "body", Type: stream.Text},
				{Name: "written_on", Field: "meta.written_on", Type: stream.Date},
			}},
	)
	if err != nil {
		t.Fatal(err)
	}
	s.ServeDeclaredBrandLists([]*stream.Stream{decl})
	b := s.data.brands[0].id
	for _, id := range []int64{b, b + 1} {
		l := decodeList(t, get(t, s, pathf("/v1/brands/%d/tb_notes", id)))
		if len(l.Data) != int(1+id%2) {
			t.Fatalf("notes of brand %d: %+v", id, l)
		}
		var rec map[string]any
		if err := json.Unmarshal(l.Data[0], &rec); err != nil {
			t.Fatal(err)
		}
		meta, _ := rec["meta"].(map[string]any)
		if rec["id"] != strconv.FormatInt(id*100+1, 10) || rec["body"] == "" || meta["written_on"] != "2026-10-31" {
			t.Fatalf("a note of brand %d: %v", id, rec)
		}
	}
	if err := s.DeleteBrand(b); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{pathf("/v1/brands/%d/tb_notes", b), "/v1/brands/99999/tb_notes", "/v1/brands/x/tb_notes"} {
		if r := get(t, s, p); r.status != http.StatusNotFound {
			t.Fatalf("%s: %d, want 404", p, r.status)
		}
	}
	if n := s.Stats().ByEndpoint["scribbles"]; n != 5 {
		t.Fatalf("requests of the list counted under its inventory name: %d, want 5", n)
	}
	var truth bytes.Buffer
	if err := s.Truth(&truth); err != nil {
		t.Fatal(err)
	}
	line := func(id int64) string {
		return `{"stream":"scribbles","key":"` + strconv.FormatInt(id*100+1, 10) + `","brand_id":"` + strconv.FormatInt(id, 10) + `"`
	}
	if !strings.Contains(truth.String(), line(b+1)) || strings.Contains(truth.String(), line(b)) {
		t.Fatalf("truth lacks %s or lists the deleted brand's notes", line(b+1))
	}
}
