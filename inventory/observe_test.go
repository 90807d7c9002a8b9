package inventory

import (
	"maps"
	"slices"
	"testing"
)

// Realistic records, as the sandbox and the assumptions doc shape them.
const (
	projectDetail = `{"id":"17","brand_id":"2","name":"Campanie toamnă 2026","status":"în desfășurare",` +
		`"start_date":"2026-09-01","deadline":"2026-12-15","closed_at":null,"updated_at":"2026-10-30T09:15:00Z",` +
		`"budget":{"amount":12500.50,"currency":"EUR"},` +
		`"team":[{"user_id":"4","full_name":"Ana Popescu","role":"manager"},{"user_id":"9","full_name":"Ion Rusu","role":"designer"}],` +
		`"deliverables":[],"history":[{"at":"2026-10-01T08:00:00Z","field":"status","from":null,"to":"în desfășurare","by_user_id":"4"}]}`
	projectPHP = `{"id":"18","brand_id":"2","name":"Rebranding","status":"planificat","start_date":"2026-11-01",` +
		`"deadline":"2027-01-31","closed_at":false,"updated_at":"2026-10-31T10:00:00Z","budget":[],"team":{},"custom_fields":[]}`
	commsRow = `{"email":{"type_id":1,"type_name":"Primit","brand_id":"3","project_id":null,"subject":"Re: Ofertă",` +
		`"message":null,"has_attachments":1,"size":20480,"mailbox_id":"a1b2c3d4e5f60718","mailbox_thread":"a1b2c3d4e5f60718",` +
		`"email_at":"2026-10-31T14:03:22.123456Z"},` +
		`"users":{"from":[{"first_name":"Andrei","last_name":null,"full_name":"Andrei ","email":"Andrei.Vasile@Yahoo.com","phone":null,"avatar":"https://app.agency.example/assets/img/avatar-blank.png","status":"Activ"}],` +
		`"to":{"12":{"first_name":"Ioana","last_name":"Marin","full_name":"Ioana Marin","email":"ioana.marin@agentia-creativa.ro","phone":"","avatar":"https://cdn.agency.example/avatars/u12.jpg","status":"Activ"},` +
		`"31":{"first_name":"Mihai","last_name":"Stan","full_name":"Mihai Stan","email":"mihai.stan@agentia-creativa.ro","phone":"+40 721 123 456","avatar":"https://app.agency.example/assets/img/avatar-blank.png","status":"Inactiv"}},` +
		`"cc":[],"bcc":[]}}`
	commsPHP = `{"email":{"type_id":false,"type_name":false,"brand_id":false,"project_id":false,"subject":"Factura",` +
		`"message":false,"has_attachments":"1","size":"1024","mailbox_id":"00000000000000ff","mailbox_thread":"00000000000000ff",` +
		`"email_at":"2026-10-30T08:00:00.000000Z"},` +
		`"users":{"from":{"maria@client.ro":{"first_name":"Maria","last_name":false,"full_name":"Maria ","email":"maria@client.ro","phone":false,"avatar":"x","status":"Activ"}},` +
		`"to":[{"first_name":"Ioana","last_name":"Marin","full_name":"Ioana Marin","email":"ioana.marin@agentia-creativa.ro","phone":"","avatar":"x","status":"Activ"}],` +
		`"cc":false,"bcc":false}}`
	brandDetail = `{"brand_info":{"id":"2","name":"Lumina SRL","status":"Activ","date_created":"2024-03-01","account_manager":"Ana Popescu",` +
		`"projects_count":15,"financial_summary":{"total_budget":192550.00,"invoiced":100.00,"collected":50.00,"currency":"RON"}},` +
		`"general_info":{"legal_name":"Lumina SRL","city":"Cluj-Napoca"},"metadata":{"created_by":"4","tags":["retail","vip"],"deep":{"a":{"b":1}}}}`
)

func fieldMap(fs []Field) map[string]Field {
	m := map[string]Field{}
	for _, f := range fs {
		m[f.Path] = f
	}
	return m
}

// observed is what TestObserve expects of a field path: the JSON types seen
// and in how many records.
type observed struct {
	types []string
	count int64
}

func TestObserve(t *testing.T) {
	tests := []struct {
		name    string
		records []string
		want    map[string]observed
		absent  []string
	}{
		{
			name:    "project detail: top level, nested objects and array elements",
			records: []string{projectDetail, projectPHP},
			want: map[string]observed{
				"name":            {[]string{TypeString}, 2},
				"closed_at":       {[]string{TypeBoolean, TypeNull}, 2},
				"budget":          {[]string{TypeArray, TypeObject}, 2},
				"budget.amount":   {[]string{TypeNumber}, 1},
				"budget.currency": {[]string{TypeString}, 1},
				"team":            {[]string{TypeArray, TypeObject}, 2},
				"team[]":          {[]string{TypeObject}, 1},
				"team[].role":     {[]string{TypeString}, 1}, // two elements, one record
				"team[].user_id":  {[]string{TypeString}, 1},
				"deliverables":    {[]string{TypeArray}, 1},
				"history[].from":  {[]string{TypeNull}, 1},
				"custom_fields":   {[]string{TypeArray}, 1},
			},
			absent: []string{"deliverables[]", "budget[]"},
		},
		{
			name:    "communications: e-mail fields and user objects of every recipient shape",
			records: []string{commsRow, commsPHP},
			want: map[string]observed{
				"email":                   {[]string{TypeObject}, 2},
				"email.type_id":           {[]string{TypeBoolean, TypeNumber}, 2},
				"email.size":              {[]string{TypeNumber, TypeString}, 2},
				"email.has_attachments":   {[]string{TypeNumber, TypeString}, 2},
				"users.from":              {[]string{TypeArray, TypeObject}, 2},
				"users.from[]":            {[]string{TypeObject}, 2},
				"users.from[].last_name":  {[]string{TypeBoolean, TypeNull}, 2},
				"users.to[].email":        {[]string{TypeString}, 2},
				"users.to[].phone":        {[]string{TypeString}, 2},
				"users.cc":                {[]string{TypeArray, TypeBoolean}, 2},
				"users.to[].status":       {[]string{TypeString}, 2},
				"users.from[].first_name": {[]string{TypeString}, 2},
			},
			absent: []string{"users.to.12", "users.to.12.email", "users.from.maria@client.ro"},
		},
		{
			name:    "brand detail: three names at most, deeper values typed but not entered",
			records: []string{brandDetail},
			want: map[string]observed{
				"brand_info.financial_summary":          {[]string{TypeObject}, 1},
				"brand_info.financial_summary.invoiced": {[]string{TypeNumber}, 1},
				"metadata.tags":                         {[]string{TypeArray}, 1},
				"metadata.tags[]":                       {[]string{TypeString}, 1},
				"metadata.deep.a":                       {[]string{TypeObject}, 1},
			},
			absent: []string{"metadata.deep.a.b"},
		},
		{
			name:    "a record that is not an object has no fields",
			records: []string{`[1,2]`, `"x"`},
			want:    map[string]observed{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewObserver("s")
			for _, r := range tc.records {
				o.Observe([]byte(r))
			}
			if o.Records() != int64(len(tc.records)) {
				t.Fatalf("records %d", o.Records())
			}
			got := fieldMap(o.Fields(nil))
			for p, w := range tc.want {
				f, ok := got[p]
				if !ok {
					t.Errorf("%s not observed; got %v", p, slices.Sorted(maps.Keys(got)))
					continue
				}
				if !slices.Equal(f.Types, w.types) || f.Count != w.count {
					t.Errorf("%s: types %v count %d, want %v %d", p, f.Types, f.Count, w.types, w.count)
				}
			}
			for _, p := range tc.absent {
				if _, ok := got[p]; ok {
					t.Errorf("%s observed", p)
				}
			}
			if len(tc.want) == 0 && len(got) != 0 {
				t.Errorf("fields %v", slices.Sorted(maps.Keys(got)))
			}
		})
	}
}

func TestObserveFilledAndMerge(t *testing.T) {
	a, b := NewObserver("communications"), NewObserver("communications")
	a.Observe([]byte(commsRow))
	b.Observe([]byte(commsPHP))
	b.Observe([]byte(commsRow))
	a.Merge(b)
	if a.Records() != 3 || a.Offered() != 3 {
		t.Fatalf("records %d offered %d", a.Records(), a.Offered())
	}
	for _, tc := range []struct {
		path         string
		seen, filled int64
	}{
		{"email.project_id", 3, 0},       // null twice, false once
		{"email.brand_id", 3, 2},         // false is a missing value
		{"users.from[].last_name", 3, 0}, // outsiders only
		{"users.to[].last_name", 3, 3},
		{"email.no_such", 0, 0},
	} {
		if s, f := a.Seen(tc.path), a.Filled(tc.path); s != tc.seen || f != tc.filled {
			t.Errorf("%s: seen %d filled %d, want %d %d", tc.path, s, f, tc.seen, tc.filled)
		}
	}
	fs := a.Fields(map[string]string{"email.subject": "communications.subject"})
	if !slices.IsSortedFunc(fs, func(x, y Field) int { return compareStr(x.Path, y.Path) }) {
		t.Fatal("fields not sorted")
	}
	m := fieldMap(fs)
	if m["email.subject"].MappedColumn != "communications.subject" || m["email.size"].MappedColumn != "" ||
		m["email.size"].Stream != "communications" {
		t.Fatalf("mapping %+v %+v", m["email.subject"], m["email.size"])
	}
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestSampling(t *testing.T) {
	o := NewObserver("communications")
	for range 1000 {
		o.Observe([]byte(commsRow))
	}
	// The first 8, then one in 128 at a random phase.
	if lo, hi := int64(SampleFirst+(1000-SampleFirst)/SampleEvery), int64(SampleFirst+(1000-SampleFirst)/SampleEvery+1); o.Records() < lo || o.Records() > hi || o.Offered() != 1000 {
		t.Fatalf("observed %d of %d, want %d..%d", o.Records(), o.Offered(), lo, hi)
	}
	fixed := NewObserver("communications")
	fixed.SetSampling(4, 100)
	for range 1000 {
		fixed.Observe([]byte(commsRow))
	}
	if fixed.Records() != 4+10 { // 1..4, then 100, 200, … 1000
		t.Fatalf("observed %d", fixed.Records())
	}
	if o.Seen("email.subject") != o.Records() {
		t.Fatalf("seen %d", o.Seen("email.subject"))
	}
	// Each run's observers sample at their own phase, so successive runs
	// over the same records see different ones.
	phases := map[int64]bool{}
	for range 20 {
		phases[New().Observer("communications").phase] = true
	}
	if len(phases) < 2 {
		t.Fatalf("20 inventories sample at phases %v", phases)
	}
	all := New()
	all.SetSampling(0, 1)
	for range 100 {
		all.Observe("projects", []byte(projectDetail))
	}
	if all.Records("projects") != 100 || all.Records("brands") != 0 {
		t.Fatalf("records %d", all.Records("projects"))
	}
}

func TestInventoryFields(t *testing.T) {
	inv := New()
	inv.Observe("projects", []byte(projectDetail))
	inv.Observe("communications", []byte(commsRow))
	other := New()
	other.Observe("projects", []byte(projectPHP))
	inv.Merge(other)
	if s := inv.Streams(); !slices.Equal(s, []string{"communications", "projects"}) {
		t.Fatalf("streams %v", s)
	}
	fs := inv.Fields(Mapping{"projects": {"name": "projects.name", "team[].role": "project_team_members.role"}})
	var last Field
	for i, f := range fs {
		if i > 0 && (f.Stream < last.Stream || f.Stream == last.Stream && f.Path <= last.Path) {
			t.Fatalf("not sorted at %d: %s/%s after %s/%s", i, f.Stream, f.Path, last.Stream, last.Path)
		}
		last = f
	}
	k := KnownOf(fs)
	if !k["projects"]["custom_fields"] || !k["communications"]["users.to[].email"] || k["projects"]["email"] {
		t.Fatalf("known %v", k)
	}
	m := map[string]string{}
	for _, f := range fs {
		if f.MappedColumn != "" {
			m[f.Path] = f.MappedColumn
		}
	}
	if len(m) != 2 || m["team[].role"] != "project_team_members.role" {
		t.Fatalf("mapped %v", m)
	}
}

func FuzzObserve(f *testing.F) {
	for _, s := range []string{projectDetail, projectPHP, commsRow, commsPHP, brandDetail, `{"a":`, `{"":{"":[]}}`, `{"1":{"2":{"3":{}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		o := NewObserver("s")
		o.SetSampling(0, 1)
		o.Observe(raw)
		o.Observe(raw)
		for _, fl := range o.Fields(nil) {
			if fl.Count < 1 || fl.Count > 2 || len(fl.Types) == 0 {
				t.Fatalf("%s: count %d types %v", fl.Path, fl.Count, fl.Types)
			}
			if o.Filled(fl.Path) > fl.Count {
				t.Fatalf("%s: filled %d > seen %d", fl.Path, o.Filled(fl.Path), fl.Count)
			}
		}
	})
}
