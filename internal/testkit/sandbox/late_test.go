package sandbox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// truthEmail is the record of e-mail key as the truth shows it.
func truthEmail(t *testing.T, s *Server, key string) map[string]any {
	t.Helper()
	id, _ := strconv.ParseInt(key, 10, 64)
	r := adminCall(t, s, http.MethodPost, "emails/"+key, `{}`)
	if r.status != http.StatusOK {
		t.Fatalf("truth record of %d: %d %s", id, r.status, r.body)
	}
	var rec map[string]any
	if err := json.Unmarshal(r.body, &rec); err != nil {
		t.Fatal(err)
	}
	return rec["email"].(map[string]any)
}

// An e-mail linked to a project after the fact: the served record, the
// truth and the -brand_url filter follow the link; the subject stays; a
// project of another brand is refused; 0 unlinks.
func TestAdminEditEmailLinks(t *testing.T) {
	s := startSmall(t, nil)
	d := s.data
	p := commsPageOf(t, s, 40, 1, 1000, "")
	var key string
	for _, k := range p.keys {
		if e := p.rows[k]["email"].(map[string]any); e["brand_id"] == nil && e["project_id"] == nil {
			key = k
			break
		}
	}
	if key == "" {
		t.Fatal("no unlinked e-mail on the first page")
	}
	before := p.rows[key]["email"].(map[string]any)
	proj := d.projects[5]
	brandID := d.brands[proj.brand].id
	r := adminCall(t, s, http.MethodPost, "emails/"+key, fmt.Sprintf(`{"project_id":%d}`, proj.id))
	if r.status != http.StatusOK {
		t.Fatalf("link: %d %s", r.status, r.body)
	}
	after := truthEmail(t, s, key)
	if after["project_id"] != fmt.Sprint(proj.id) || after["brand_id"] != fmt.Sprint(brandID) {
		t.Errorf("linked e-mail shows brand %v, project %v; want %d, %d", after["brand_id"], after["project_id"], brandID, proj.id)
	}
	if after["subject"] != before["subject"] || after["email_at"] != before["email_at"] {
		t.Errorf("the link changed the subject or the date: %v -> %v", before, after)
	}
	served := commsPageOf(t, s, 40, 1, 1000, fmt.Sprintf(`,"-brand_url":"%s%d"`, BrandURLPrefix, brandID))
	if _, ok := served.rows[key]; !ok {
		t.Errorf("the brand filter does not return the e-mail linked to brand %d", brandID)
	}
	other := d.brands[(proj.brand+1)%len(d.brands)].id
	if r := adminCall(t, s, http.MethodPost, "emails/"+key, fmt.Sprintf(`{"project_id":%d,"brand_id":%d}`, proj.id, other)); r.status != http.StatusBadRequest {
		t.Errorf("a project of another brand: %d, want 400", r.status)
	}
	for _, bad := range []string{`{"project_id":999999999}`, `{"brand_id":999999999}`, `{"email_at":"yesterday"}`} {
		if r := adminCall(t, s, http.MethodPost, "emails/"+key, bad); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, r.status)
		}
	}
	// Another brand alone drops the project of the first.
	if r := adminCall(t, s, http.MethodPost, "emails/"+key, fmt.Sprintf(`{"brand_id":%d}`, other)); r.status != http.StatusOK {
		t.Fatalf("relink: %d %s", r.status, r.body)
	}
	if e := truthEmail(t, s, key); e["brand_id"] != fmt.Sprint(other) || e["project_id"] != nil {
		t.Errorf("relinked to brand %d: brand %v, project %v", other, e["brand_id"], e["project_id"])
	}
	if r := adminCall(t, s, http.MethodPost, "emails/"+key, `{"brand_id":0}`); r.status != http.StatusOK {
		t.Fatalf("unlink: %d %s", r.status, r.body)
	}
	if e := truthEmail(t, s, key); e["brand_id"] != nil || e["project_id"] != nil {
		t.Errorf("unlinked e-mail: brand %v, project %v", e["brand_id"], e["project_id"])
	}
}

// An old e-mail whose email_at is edited stays filed where it was: the day
// filter still returns it on its filing day, with the new email_at.
func TestAdminEditEmailDate(t *testing.T) {
	s := startSmall(t, nil)
	p := commsPageOf(t, s, 40, 1, 5, "")
	key := p.keys[2]
	at, err := time.Parse(time.RFC3339Nano, p.rows[key]["email"].(map[string]any)["email_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if r := adminCall(t, s, http.MethodPost, "emails/"+key, `{"email_at":"0001-01-01T00:00:00Z"}`); r.status != http.StatusOK {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	day := at.UTC().Format(layoutDate)
	filed := commsPageOf(t, s, 40, 1, 1000, fmt.Sprintf(`,"date_start":%q,"date_end":%q`, day, day))
	row, ok := filed.rows[key]
	if !ok {
		t.Fatalf("e-mail %s is no longer filed on %s", key, day)
	}
	if got := row["email"].(map[string]any)["email_at"]; got != "0001-01-01T00:00:00.000000Z" {
		t.Errorf("served email_at %v", got)
	}
}

// With the day boundary at UTC+3, an e-mail sent at 21:30 UTC is filed
// under the next day; the twist moves the boundary at run time.
func TestCommsDayOffset(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.CommsDayOffset = 3 * time.Hour })
	all := commsPageOf(t, s, 40, 1, 1000, "")
	var key string
	var at time.Time
	for _, k := range all.keys {
		a, err := time.Parse(time.RFC3339Nano, all.rows[k]["email"].(map[string]any)["email_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if h := a.UTC().Hour(); h >= 21 {
			key, at = k, a.UTC()
			break
		}
	}
	if key == "" {
		t.Fatal("no e-mail after 21:00 UTC on the first page")
	}
	inDay := func(day time.Time) bool {
		d := day.Format(layoutDate)
		_, ok := commsPageOf(t, s, 40, 1, 1000, fmt.Sprintf(`,"date_start":%q,"date_end":%q`, d, d)).rows[key]
		return ok
	}
	utcDay := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	if inDay(utcDay) || !inDay(utcDay.AddDate(0, 0, 1)) {
		t.Errorf("e-mail at %s: want it filed under %s at UTC+3", at, utcDay.AddDate(0, 0, 1).Format(layoutDate))
	}
	if r := adminCall(t, s, http.MethodPost, "twists", `{"comms_day_offset":"0s"}`); r.status != http.StatusOK {
		t.Fatalf("twist: %d %s", r.status, r.body)
	}
	if !inDay(utcDay) || inDay(utcDay.AddDate(0, 0, 1)) {
		t.Errorf("e-mail at %s: want it filed under its UTC day after the twist", at)
	}
	for _, bad := range []string{`{"comms_day_offset":"15h"}`, `{"comms_day_offset":"soon"}`} {
		if r := adminCall(t, s, http.MethodPost, "twists", bad); r.status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, r.status)
		}
	}
	o := smallOptions()
	o.CommsDayOffset = -15 * time.Hour
	if _, err := New(o); err == nil {
		t.Error("an offset of -15h was accepted")
	}
}

// A finance correction with keep_updated_at leaves updated_at as it was.
func TestAdminFinanceKeepUpdatedAt(t *testing.T) {
	s := startSmall(t, nil)
	if _, err := s.Advance(48 * time.Hour); err != nil {
		t.Fatal(err)
	}
	rows := getAll(t, s, "/v1/finance/invoices")
	id := rows[0]["id"]
	was := rows[0]["updated_at"]
	r := adminCall(t, s, http.MethodPost, pathf("finance/invoices/%v", id), `{"amount":"123.45","keep_updated_at":true}`)
	if r.status != http.StatusOK {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	for _, row := range getAll(t, s, "/v1/finance/invoices") {
		if row["id"] == id && (row["updated_at"] != was || fmt.Sprint(row["amount"]) != "123.45") {
			t.Errorf("invoice %v after a correction keeping updated_at: amount %v, updated_at %v (was %v)", id, row["amount"], row["updated_at"], was)
		}
	}
}
