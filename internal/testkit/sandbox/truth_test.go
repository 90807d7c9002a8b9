package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

type truthLine struct {
	Stream  string          `json:"stream"`
	Key     string          `json:"key"`
	BrandID string          `json:"brand_id"`
	Bad     bool            `json:"bad"`
	Record  json.RawMessage `json:"record"`
}

func readTruth(t testing.TB, s *Server) map[string][]truthLine {
	t.Helper()
	r := adminCall(t, s, http.MethodGet, "truth", "")
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("truth: %d %s", r.status, r.header.Get("Content-Type"))
	}
	var viaGo bytes.Buffer
	if err := s.Truth(&viaGo); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(viaGo.Bytes(), r.body) {
		t.Fatal("Truth and GET /_sandbox/truth differ")
	}
	out := map[string][]truthLine{}
	order := []string{}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l truthLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("truth line %q: %v", sc.Text(), err)
		}
		if len(order) == 0 || order[len(order)-1] != l.Stream {
			order = append(order, l.Stream)
		}
		out[l.Stream] = append(out[l.Stream], l)
	}
	want := []string{"brands", "brand_details", "contacts"}
	for _, l := range s.brandLists {
		want = append(want, l.name)
	}
	want = append(want, "projects", "budgets", "invoices", "collections", "payments", "profitability", "summary", "communications")
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("stream order %v", order)
	}
	for stream, lines := range out {
		seen := map[string]bool{}
		for _, l := range lines {
			if seen[l.Key] {
				t.Fatalf("%s key %s twice", stream, l.Key)
			}
			seen[l.Key] = true
		}
	}
	return out
}

// rawList fetches all elements of a canonical list as raw bytes.
func rawList(t testing.TB, s *Server, path string) []json.RawMessage {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var out []json.RawMessage
	for page := 1; ; page++ {
		l := decodeList(t, get(t, s, path+sep+"per_page=1000&page="+strconv.Itoa(page)))
		out = append(out, l.Data...)
		if l.CurrentPage >= l.LastPage {
			return out
		}
	}
}

func TestTruthMatchesTheAPI(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.BadRecordRate = 0.05 })
	truth := readTruth(t, s)
	same := func(stream string, served []json.RawMessage) {
		t.Helper()
		lines := truth[stream]
		if len(lines) != len(served) {
			t.Fatalf("%s: truth %d records, API %d", stream, len(lines), len(served))
		}
		for k := range lines {
			if !bytes.Equal(lines[k].Record, served[k]) {
				t.Fatalf("%s %s: truth %s\nAPI %s", stream, lines[k].Key, lines[k].Record, served[k])
			}
		}
	}
	same("brands", rawList(t, s, "/v1/brands"))
	same("projects", func() []json.RawMessage {
		var out []json.RawMessage
		for _, l := range truth["projects"] {
			out = append(out, get(t, s, "/v1/projects/"+l.Key).body)
		}
		return out
	}())
	var details, contacts []json.RawMessage
	for _, l := range truth["brands"] {
		details = append(details, get(t, s, "/v1/brands/"+l.Key).body)
		contacts = append(contacts, rawList(t, s, "/v1/brands/"+l.Key+"/contacts")...)
	}
	same("brand_details", details)
	same("contacts", contacts)
	for _, stream := range []string{"budgets", "invoices", "collections", "payments", "profitability", "summary"} {
		same(stream, rawList(t, s, "/v1/finance/"+stream))
	}
	// communications: every record of all users over all dates, in order
	r := commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`,"per_page":1000,"page":1}`)
	var total int
	var served []json.RawMessage
	for page := 1; ; page++ {
		if page > 1 {
			r = commsPost(t, s, `{"user_id":`+allUsers(s.opts.Users)+`,"per_page":1000,"page":`+strconv.Itoa(page)+`}`)
		}
		p := decodeComms(t, r.body)
		total = p.total
		var rows map[string]json.RawMessage
		if err := json.Unmarshal(p.rawRows, &rows); err != nil {
			t.Fatal(err)
		}
		for _, k := range p.keys {
			served = append(served, rows[k])
		}
		if page >= p.lastPage {
			break
		}
	}
	if len(truth["communications"]) != total || total != s.opts.Emails {
		t.Fatalf("truth has %d e-mails, all users match %d", len(truth["communications"]), total)
	}
	same("communications", served)
	var bad int
	for _, l := range truth["communications"] {
		if l.Bad {
			bad++
		}
	}
	if bad == 0 || bad > total/10 {
		t.Fatalf("%d bad e-mails flagged at rate 0.05", bad)
	}
}

// money reads a JSON number as cents without floats.
func money(t testing.TB, v json.RawMessage) int64 {
	t.Helper()
	c, err := parseCents(string(v))
	if err != nil {
		t.Fatalf("amount %s: %v", v, err)
	}
	return c
}

func TestTruthFinanceAgrees(t *testing.T) {
	s := startSmall(t, func(o *Options) { o.Brands = 12; o.ProjectsPerBrand = 6; o.HistoryDays = 500 })
	truth := readTruth(t, s)
	type rec map[string]json.RawMessage
	decode := func(l truthLine) rec {
		var r rec
		if err := json.Unmarshal(l.Record, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	str := func(v json.RawMessage) string {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			t.Fatalf("not a string: %s", v)
		}
		return s
	}
	projBrand := map[string]string{}
	projBudget := map[string]int64{}
	brandCur := map[string]string{}
	projCount := map[string]int{}
	for _, l := range truth["projects"] {
		p := decode(l)
		projBrand[l.Key] = str(p["brand_id"])
		projCount[str(p["brand_id"])]++
		var b struct {
			Amount json.RawMessage `json:"amount"`
		}
		_ = json.Unmarshal(p["budget"], &b)
		projBudget[l.Key] = money(t, b.Amount)
	}
	type sums struct{ budget, invoiced, collected int64 }
	brandSums := map[string]*sums{}
	get := func(b string) *sums {
		if brandSums[b] == nil {
			brandSums[b] = &sums{}
		}
		return brandSums[b]
	}
	budgetByProject := map[string]int64{}
	ron := map[string]*summaryMonth{}
	month := func(date string) *summaryMonth {
		if ron[date[:7]] == nil {
			ron[date[:7]] = &summaryMonth{}
		}
		return ron[date[:7]]
	}
	type pk struct{ entity, period string }
	revenue, cost := map[pk]int64{}, map[pk]int64{}
	for _, l := range truth["budgets"] {
		b := decode(l)
		pid := str(b["project_id"])
		if projBrand[pid] == "" || projBrand[pid] != str(b["brand_id"]) {
			t.Fatalf("budget %s of unknown project %s", l.Key, pid)
		}
		get(projBrand[pid]).budget += money(t, b["amount"])
		budgetByProject[pid] += money(t, b["amount"])
		month(str(b["period_start"])).totalBudget += toRON(money(t, b["amount"]), str(b["currency"]))
	}
	invBrand := map[string]string{}
	for _, l := range truth["invoices"] {
		inv := decode(l)
		pid := str(inv["project_id"])
		if projBrand[pid] == "" || projBrand[pid] != str(inv["brand_id"]) {
			t.Fatalf("invoice %s of unknown project %s", l.Key, pid)
		}
		invBrand[l.Key] = projBrand[pid]
		if str(inv["status"]) == invoiceCancelled {
			continue
		}
		a := money(t, inv["amount"])
		get(projBrand[pid]).invoiced += a
		revenue[pk{pid, str(inv["issue_date"])[:7]}] += a
		month(str(inv["issue_date"])).invoiced += toRON(a, str(inv["currency"]))
	}
	for _, l := range truth["collections"] {
		c := decode(l)
		b := invBrand[str(c["invoice_id"])]
		if b == "" {
			t.Fatalf("collection %s of unknown invoice", l.Key)
		}
		get(b).collected += money(t, c["amount"])
		month(str(c["collected_on"])).collected += toRON(money(t, c["amount"]), str(c["currency"]))
	}
	for _, l := range truth["payments"] {
		p := decode(l)
		pid := str(p["project_id"])
		if projBrand[pid] == "" {
			t.Fatalf("payment %s of unknown project", l.Key)
		}
		if str(p["status"]) == paymentDone {
			cost[pk{pid, str(p["paid_on"])[:7]}] += money(t, p["amount"])
			month(str(p["paid_on"])).paid += toRON(money(t, p["amount"]), str(p["currency"]))
		}
	}
	if len(truth["brands"]) != s.opts.Brands {
		t.Fatalf("%d brands", len(truth["brands"]))
	}
	for _, l := range truth["brands"] {
		var el struct {
			Info struct {
				ID            string `json:"id"`
				ProjectsCount int    `json:"projects_count"`
				FS            struct {
					TotalBudget json.RawMessage `json:"total_budget"`
					Invoiced    json.RawMessage `json:"invoiced"`
					Collected   json.RawMessage `json:"collected"`
					Currency    string          `json:"currency"`
				} `json:"financial_summary"`
			} `json:"brand_info"`
		}
		if err := json.Unmarshal(l.Record, &el); err != nil {
			t.Fatal(err)
		}
		in := el.Info
		want := get(in.ID)
		brandCur[in.ID] = in.FS.Currency
		if in.ProjectsCount != projCount[in.ID] || in.ProjectsCount != s.opts.ProjectsPerBrand ||
			money(t, in.FS.TotalBudget) != want.budget || money(t, in.FS.Invoiced) != want.invoiced || money(t, in.FS.Collected) != want.collected {
			t.Fatalf("brand %s: count %d budget %s invoiced %s collected %s; sums %+v count %d", in.ID, in.ProjectsCount,
				in.FS.TotalBudget, in.FS.Invoiced, in.FS.Collected, *want, projCount[in.ID])
		}
		if want.collected > want.invoiced || want.invoiced == 0 {
			t.Fatalf("brand %s collected %d of %d invoiced", in.ID, want.collected, want.invoiced)
		}
	}
	for pid, b := range projBudget {
		if budgetByProject[pid] != b {
			t.Fatalf("project %s budget %d, budgets add to %d", pid, b, budgetByProject[pid])
		}
	}
	brandRev, brandCost := map[pk]int64{}, map[pk]int64{}
	rows := 0
	for _, l := range truth["profitability"] {
		p := decode(l)
		level, id, period := str(p["level"]), str(p["entity_id"]), str(p["period"])
		if l.Key != level+":"+id+":"+period {
			t.Fatalf("profitability key %s", l.Key)
		}
		r, c, m := money(t, p["revenue"]), money(t, p["cost"]), money(t, p["margin"])
		if m != r-c {
			t.Fatalf("%s: margin %d != %d - %d", l.Key, m, r, c)
		}
		switch level {
		case "project":
			rows++
			if r != revenue[pk{id, period}] || c != cost[pk{id, period}] || str(p["currency"]) != brandCur[projBrand[id]] {
				t.Fatalf("%s: revenue %d cost %d, records say %d %d", l.Key, r, c, revenue[pk{id, period}], cost[pk{id, period}])
			}
			brandRev[pk{projBrand[id], period}] += r
			brandCost[pk{projBrand[id], period}] += c
		case "brand":
			if r != brandRev[pk{id, period}] || c != brandCost[pk{id, period}] {
				t.Fatalf("%s: revenue %d cost %d, its projects %d %d", l.Key, r, c, brandRev[pk{id, period}], brandCost[pk{id, period}])
			}
		}
	}
	if rows == 0 {
		t.Fatal("no project profitability")
	}
	for _, l := range truth["summary"] {
		p := decode(l)
		want := ron[l.Key]
		if want == nil {
			want = &summaryMonth{}
		}
		if money(t, p["total_budget"]) != want.totalBudget || money(t, p["invoiced"]) != want.invoiced ||
			money(t, p["collected"]) != want.collected || money(t, p["paid"]) != want.paid ||
			money(t, p["profit"]) != want.invoiced-want.paid || str(p["currency"]) != "RON" {
			t.Fatalf("summary %s: %s, records say %+v", l.Key, l.Record, *want)
		}
		delete(ron, l.Key)
	}
	if len(ron) != 0 {
		t.Fatalf("months without a summary row: %v", ron)
	}
}

func TestTruthLeavesOutDeleted(t *testing.T) {
	s := startSmall(t, nil)
	b, p := s.data.brands[0], s.data.projects[5]
	if err := s.DeleteBrand(b.id); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteProject(p.id); err != nil {
		t.Fatal(err)
	}
	truth := readTruth(t, s)
	bid, pid := strconv.FormatInt(b.id, 10), strconv.FormatInt(p.id, 10)
	for _, stream := range []string{"brands", "brand_details"} {
		for _, l := range truth[stream] {
			if l.Key == bid {
				t.Fatalf("deleted brand in %s", stream)
			}
		}
	}
	for _, l := range truth["contacts"] {
		if l.BrandID == bid {
			t.Fatal("contact of a deleted brand")
		}
	}
	for _, l := range truth["projects"] {
		if l.Key == pid {
			t.Fatal("deleted project in truth")
		}
	}
	if len(truth["brands"]) != s.opts.Brands-1 || len(truth["projects"]) != len(s.data.projects)-1 {
		t.Fatalf("%d brands, %d projects", len(truth["brands"]), len(truth["projects"]))
	}
}
