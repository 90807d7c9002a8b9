package sandbox

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func withVariants(names ...string) func(*Options) {
	return func(o *Options) { o.Variants = names }
}

func decodeAny(t testing.TB, r response) any {
	t.Helper()
	return decodeOK[any](t, r)
}

func TestVariantValidation(t *testing.T) {
	for _, vs := range [][]string{{"no-such-variant"}, {VariantBareArray, VariantMetaPaging}, {VariantRowsShape, VariantNoPaging}} {
		o := smallOptions()
		o.Variants = vs
		if _, err := New(o); err == nil {
			t.Errorf("variants %v accepted", vs)
		}
	}
	o := smallOptions()
	for _, v := range Variants() {
		if v.Name == VariantBareArray || v.Name == VariantMetaPaging || v.Name == VariantPaginationPaging ||
			v.Name == VariantNoPaging || v.Name == VariantRowsArray || v.Name == VariantPHPPaginator ||
			v.Name == VariantPHPResource || v.Name == VariantPHP || isPagingVariant(v.Name) {
			continue
		}
		o.Variants = append(o.Variants, v.Name)
	}
	if _, err := New(o); err != nil {
		t.Fatalf("all compatible variants together: %v", err)
	}
}

func TestVariantListShapes(t *testing.T) {
	paging := func(t *testing.T, m map[string]any, total int) {
		t.Helper()
		if m["total"] != float64(total) || m["per_page"] != 3.0 || m["current_page"] != 1.0 || m["last_page"] != float64((total+2)/3) {
			t.Fatalf("paging %v", m)
		}
	}
	t.Run(VariantBareArray, func(t *testing.T) {
		s := startSmall(t, withVariants(VariantBareArray))
		arr, ok := decodeAny(t, get(t, s, "/v1/brands?per_page=3")).([]any)
		if !ok || len(arr) != 3 || arr[0].(map[string]any)["brand_info"] == nil {
			t.Fatalf("not a bare array of wrapped brands: %v", arr)
		}
	})
	for _, name := range []string{VariantMetaPaging, VariantPaginationPaging} {
		t.Run(name, func(t *testing.T) {
			s := startSmall(t, withVariants(name))
			m := decodeAny(t, get(t, s, "/v1/projects?per_page=3")).(map[string]any)
			key := "meta"
			if name == VariantPaginationPaging {
				key = "pagination"
			}
			if len(m) != 2 || len(m["data"].([]any)) != 3 {
				t.Fatalf("top level %v", m)
			}
			paging(t, m[key].(map[string]any), len(s.data.projects))
		})
	}
	t.Run(VariantNoPaging, func(t *testing.T) {
		s := startSmall(t, withVariants(VariantNoPaging))
		m := decodeAny(t, get(t, s, "/v1/finance/invoices?per_page=3")).(map[string]any)
		if len(m) != 1 || len(m["data"].([]any)) != 3 {
			t.Fatalf("top level %v", m)
		}
	})
	t.Run(VariantRowsShape, func(t *testing.T) {
		s := startSmall(t, withVariants(VariantRowsShape))
		m := decodeAny(t, get(t, s, "/v1/brands?per_page=3")).(map[string]any)["data"].(map[string]any)
		rows := m["rows"].(map[string]any)
		paging(t, m, len(s.data.brands))
		for k, v := range rows {
			if v.(map[string]any)["brand_info"].(map[string]any)["id"] != k {
				t.Fatalf("row %s holds %v", k, v)
			}
		}
		pm := decodeAny(t, get(t, s, "/v1/finance/profitability?per_page=3")).(map[string]any)["data"].(map[string]any)
		for k, v := range pm["rows"].(map[string]any) {
			r := v.(map[string]any)
			if k != r["level"].(string)+":"+r["entity_id"].(string)+":"+r["period"].(string) {
				t.Fatalf("profitability row %s holds %v", k, r)
			}
		}
		empty := decodeAny(t, get(t, s, "/v1/brands?page=99")).(map[string]any)["data"].(map[string]any)
		if rows, ok := empty["rows"].(map[string]any); !ok || len(rows) != 0 {
			t.Fatalf("empty rows %v", empty["rows"])
		}
	})
	t.Run(VariantRowsArray, func(t *testing.T) {
		s := startSmall(t, withVariants(VariantRowsArray))
		m := decodeAny(t, get(t, s, "/v1/finance/payments?per_page=3")).(map[string]any)["data"].(map[string]any)
		if rows, ok := m["rows"].([]any); !ok || len(rows) != 3 {
			t.Fatalf("rows %v", m["rows"])
		}
		paging(t, m, len(s.data.payments))
	})
}

func TestVariantWrapping(t *testing.T) {
	s := startSmall(t, withVariants(VariantUnwrapped, VariantWrapped))
	brands := decodeList(t, get(t, s, "/v1/brands?per_page=2"))
	var b map[string]any
	_ = json.Unmarshal(brands.Data[0], &b)
	if b["id"] == nil || b["brand_info"] != nil {
		t.Fatalf("brand not unwrapped: %v", b)
	}
	for path, wrap := range map[string]string{
		"/v1/projects": "project_info", "/v1/finance/invoices": "invoice_info", "/v1/finance/budgets": "budget_info",
		"/v1/finance/collections": "collection_info", "/v1/finance/payments": "payment_info",
		"/v1/finance/profitability": "profitability_info", "/v1/finance/summary": "summary_info",
		pathf("/v1/brands/%d/contacts", s.data.brands[0].id): "contact_info",
	} {
		l := decodeList(t, get(t, s, path+"?per_page=2"))
		var m map[string]any
		_ = json.Unmarshal(l.Data[0], &m)
		if len(m) != 1 || m[wrap] == nil {
			t.Errorf("%s element %v not wrapped in %s", path, m, wrap)
		}
	}
	// The brand detail keeps its shape.
	if d := get(t, s, pathf("/v1/brands/%d", s.data.brands[0].id)).json(t); d["brand_info"] == nil || d["general_info"] == nil {
		t.Fatalf("detail %v", d)
	}
}

func TestVariantNumericIDsAndStringMoney(t *testing.T) {
	canon := startSmall(t, nil)
	s := startSmall(t, withVariants(VariantNumericIDs, VariantStringMoney))
	b := decodeList(t, get(t, s, "/v1/brands?per_page=1"))
	var el map[string]map[string]any
	_ = json.Unmarshal(b.Data[0], &el)
	info := el["brand_info"]
	if _, ok := info["id"].(float64); !ok {
		t.Fatalf("brand id %v", info["id"])
	}
	fs := info["financial_summary"].(map[string]any)
	if v, ok := fs["invoiced"].(string); !ok || !strings.Contains(v, ".") {
		t.Fatalf("invoiced %v", fs["invoiced"])
	}
	cb := decodeList(t, get(t, canon, "/v1/brands?per_page=1"))
	var cel map[string]map[string]any
	_ = json.Unmarshal(cb.Data[0], &cel)
	if strconv.FormatFloat(info["id"].(float64), 'f', -1, 64) != cel["brand_info"]["id"] {
		t.Fatalf("ids differ: %v vs %v", info["id"], cel["brand_info"]["id"])
	}
	p := get(t, s, pathf("/v1/projects/%d", s.data.projects[0].id)).json(t)
	if _, ok := p["brand_id"].(float64); !ok {
		t.Fatalf("project brand_id %v", p["brand_id"])
	}
	if _, ok := p["team"].([]any)[0].(map[string]any)["user_id"].(float64); !ok {
		t.Fatalf("team user_id %v", p["team"])
	}
	// On the communications endpoint brand_id and project_id become numbers.
	page := decodeComms(t, commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`,"per_page":200}`).body)
	var sawNumber bool
	for _, k := range page.keys {
		if _, ok := page.rows[k]["email"].(map[string]any)["brand_id"].(float64); ok {
			sawNumber = true
		}
		if _, ok := page.rows[k]["email"].(map[string]any)["brand_id"].(string); ok {
			t.Fatal("string brand_id with numeric-ids")
		}
	}
	if !sawNumber {
		t.Fatal("no numeric brand_id")
	}
}

func TestVariantRecipients(t *testing.T) {
	s := startSmall(t, withVariants(VariantRecipientsArray, VariantFromObject, VariantEmptyAsObject))
	canon := startSmall(t, nil)
	body := `{"user_id":` + allUsers(s.opts.Users) + `,"per_page":300}`
	p := decodeComms(t, commsPost(t, s, body).body)
	c := decodeComms(t, commsPost(t, canon, body).body)
	var sawArray, sawEmptyObject bool
	for _, k := range p.keys {
		users := p.rows[k]["users"].(map[string]any)
		from, ok := users["from"].(map[string]any)
		if !ok || len(from) != 1 {
			t.Fatalf("from %v", users["from"])
		}
		canonFrom := c.rows[k]["users"].(map[string]any)["from"].([]any)[0].(map[string]any)
		for key, u := range from {
			if id, err := strconv.Atoi(key); err == nil {
				if s.mail.people[id].email != canonFrom["email"] {
					t.Fatalf("from keyed %s but is %v", key, canonFrom)
				}
			} else if key != strings.ToLower(canonFrom["email"].(string)) || u.(map[string]any)["email"] != canonFrom["email"] {
				t.Fatalf("outsider sender keyed %q: %v", key, u)
			}
		}
		for _, role := range []string{"to", "cc", "bcc"} {
			canonRole := c.rows[k]["users"].(map[string]any)[role]
			switch v := users[role].(type) {
			case []any:
				sawArray = true
				cm := canonRole.(map[string]any)
				if len(v) != len(cm) {
					t.Fatalf("%s: %d users, canonical %d", role, len(v), len(cm))
				}
			case map[string]any:
				if len(v) != 0 {
					t.Fatalf("%s non-empty object with recipients-array", role)
				}
				if arr, ok := canonRole.([]any); !ok || len(arr) != 0 {
					t.Fatalf("%s empty here, canonical %v", role, canonRole)
				}
				sawEmptyObject = true
			}
		}
	}
	if !sawArray || !sawEmptyObject {
		t.Fatalf("array %t empty object %t", sawArray, sawEmptyObject)
	}
	// empty-as-object also applies to main lists.
	if m := decodeAny(t, get(t, s, "/v1/brands?page=99")).(map[string]any); m["data"] == nil {
		t.Fatal("no data")
	} else if obj, ok := m["data"].(map[string]any); !ok || len(obj) != 0 {
		t.Fatalf("empty data %v", m["data"])
	}
}

func TestVariantEmptyRows(t *testing.T) {
	s := startSmall(t, withVariants(VariantEmptyRowsArray))
	r := commsPost(t, s, `{"user_id":[1],"domain_id":99}`)
	if !strings.Contains(string(r.body), `"rows":[]`) {
		t.Fatalf("empty rows: %s", r.body)
	}
	canon := startSmall(t, nil)
	if r := commsPost(t, canon, `{"user_id":[1],"domain_id":99}`); string(r.body) != `{"data":{"rows":{},"total":0,"per_page":20,"current_page":1,"last_page":0}}` {
		t.Fatalf("canonical empty answer: %s", r.body)
	}
}

func TestVariantSmallPage(t *testing.T) {
	s := startSmall(t, withVariants(VariantSmallPage))
	p := decodeComms(t, commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`,"per_page":1000}`).body)
	if p.perPage != smallPageCap || len(p.keys) != smallPageCap || p.lastPage != (s.opts.Emails+smallPageCap-1)/smallPageCap {
		t.Fatalf("comms: per_page %d rows %d last %d", p.perPage, len(p.keys), p.lastPage)
	}
	if l := decodeList(t, get(t, s, "/v1/finance/invoices?per_page=1000")); l.PerPage != smallPageCap || len(l.Data) != min(smallPageCap, l.Total) {
		t.Fatalf("main: per_page %d rows %d", l.PerPage, len(l.Data))
	}
}

func TestVariantHasAttachments(t *testing.T) {
	s := startSmall(t, withVariants(VariantHasAttachments))
	canon := startSmall(t, nil)
	body := `{"user_id":` + allUsers(s.opts.Users) + `,"per_page":1000}`
	p := decodeComms(t, commsPost(t, s, body).body)
	c := decodeComms(t, commsPost(t, canon, body).body)
	seen := map[string]int{}
	for _, k := range p.keys {
		v := p.rows[k]["email"].(map[string]any)["has_attachments"]
		cv := c.rows[k]["email"].(map[string]any)["has_attachments"]
		switch {
		case v == 1.0 || v == true:
			if cv != 1.0 {
				t.Fatalf("%s: %v, canonical %v", k, v, cv)
			}
		case v == 0.0 || v == nil:
			if cv != nil {
				t.Fatalf("%s: %v, canonical %v", k, v, cv)
			}
		default:
			t.Fatalf("has_attachments %v", v)
		}
		seen[strings.TrimSpace(string(mustJSON(v)))]++
	}
	for _, want := range []string{"1", "true", "0", "null"} {
		if seen[want] == 0 {
			t.Errorf("no has_attachments %s: %v", want, seen)
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestVariantIgnoreUpdatedSince(t *testing.T) {
	canon := startSmall(t, nil)
	s := startSmall(t, withVariants(VariantIgnoreUpdatedSince))
	future := "2099-01-01"
	for _, path := range []string{"/v1/projects", "/v1/finance/invoices", "/v1/finance/budgets", "/v1/finance/collections", "/v1/finance/payments"} {
		if l := decodeList(t, get(t, canon, path+"?updated_since="+future)); l.Total != 0 {
			t.Errorf("canonical %s honours nothing: %d", path, l.Total)
		}
		if l := decodeList(t, get(t, s, path+"?updated_since="+future)); l.Total == 0 {
			t.Errorf("%s filtered despite the variant", path)
		}
	}
}

func TestVariantOutsiderRecipients(t *testing.T) {
	s := startSmall(t, withVariants(VariantOutsiderRecipients))
	p := decodeComms(t, commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`,"per_page":500}`).body)
	var keyedByEmail int
	for _, k := range p.keys {
		for _, role := range []string{"to", "cc"} {
			m, ok := p.rows[k]["users"].(map[string]any)[role].(map[string]any)
			if !ok {
				continue
			}
			for key, u := range m {
				if _, err := strconv.Atoi(key); err != nil {
					keyedByEmail++
					um := u.(map[string]any)
					if key != strings.ToLower(um["email"].(string)) || um["last_name"] != nil {
						t.Fatalf("outsider recipient %s: %v", key, um)
					}
				}
			}
		}
	}
	if keyedByEmail == 0 {
		t.Fatal("no outsider recipient")
	}
	if total := decodeComms(t, commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`}`).body).total; total != s.opts.Emails {
		t.Fatalf("total %d", total)
	}
}
