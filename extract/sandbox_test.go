package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/stream"
)

// Integration tests against the project's in-process sandbox of the service.

func startSandbox(t *testing.T, mut func(*sandbox.Options)) *sandbox.Server {
	t.Helper()
	o := sandbox.DefaultOptions()
	o.Seed = 7
	o.Brands, o.ProjectsPerBrand, o.Users, o.Emails = 4, 3, 15, 700
	o.APIKey, o.CommsKey = testKey, testCommsKey
	o.NoLimits = true
	if mut != nil {
		mut(&o)
	}
	s, err := sandbox.New(o)
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	if err := s.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatalf("sandbox start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// truthKeys reads the sandbox's dataset: stream -> key -> bad.
func truthKeys(t *testing.T, s *sandbox.Server) map[string]map[string]bool {
	t.Helper()
	var buf bytes.Buffer
	if err := s.Truth(&buf); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var l struct {
			Stream string `json:"stream"`
			Key    string `json:"key"`
			Bad    bool   `json:"bad"`
		}
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		if out[l.Stream] == nil {
			out[l.Stream] = map[string]bool{}
		}
		out[l.Stream][l.Key] = l.Bad
	}
	return out
}

// seen counts deliveries per stream and key.
type seen map[string]map[string]int

func (sn seen) add(stream, key string) {
	if sn[stream] == nil {
		sn[stream] = map[string]int{}
	}
	sn[stream][key]++
}

// recordKey is the key the sandbox's truth gives a record, read from its raw
// JSON as the transform would: its listed key, else its id (inside a
// <thing>_info wrapper too); profitability by level, entity and period
// (the level asked when the row does not name it), the summary by period.
func recordKey(stream, level string, r Record) string {
	if r.Key != "" {
		return r.Key
	}
	obj := gjson.ParseBytes(r.Raw)
	n, inner := 0, gjson.Result{}
	obj.ForEach(func(k, v gjson.Result) bool {
		n++
		if strings.HasSuffix(k.Str, "_info") && v.IsObject() {
			inner = v
		}
		return true
	})
	if n == 1 && inner.Exists() {
		obj = inner
	}
	text := func(path string) string {
		v := obj.Get(path)
		if v.Type == gjson.Number {
			return v.Raw
		}
		return strings.TrimSpace(v.String())
	}
	switch stream {
	case "profitability":
		if l := text("level"); l != "" {
			level = l
		}
		return level + ":" + text("entity_id") + ":" + text("period")
	case "summary":
		return text("period")
	}
	return text("id")
}

func addPage(sn seen, stream, level string, p *Page, rejected map[string]map[string]bool) {
	for _, r := range p.Records {
		sn.add(stream, recordKey(stream, level, r))
	}
	for _, r := range p.Rejects {
		sn.add(stream, r.Key)
		if rejected[stream] == nil {
			rejected[stream] = map[string]bool{}
		}
		rejected[stream][r.Key] = true
	}
}

func drain(t *testing.T, sn seen, rej map[string]map[string]bool, stream, level string, seq func(func(*Page, error) bool)) []ID {
	t.Helper()
	var keys []ID
	for p, err := range seq {
		if err != nil {
			t.Fatalf("%s: %v", stream, err)
		}
		addPage(sn, stream, level, p, rej)
		if p.End != nil && !p.End.Proven {
			t.Errorf("%s: listing not proven complete: %s", stream, p.End.Reason)
		}
		for _, r := range p.Records {
			keys = append(keys, ID(recordKey(stream, level, r)))
		}
	}
	return keys
}

// brandChildLists are the declared lists asked per brand (a brand's
// contacts, and any other a stream declares).
func brandChildLists() []stream.Endpoint {
	var out []stream.Endpoint
	for _, s := range stream.All() {
		for _, ep := range s.EndpointsOf(stream.KindChild) {
			if ep.Parent == stream.EndpointBrands {
				out = append(out, ep)
			}
		}
	}
	return out
}

// extractAll reads every stream of the sandbox through the client.
func extractAll(t *testing.T, c *Client, users int) (seen, map[string]map[string]bool) {
	t.Helper()
	ctx := context.Background()
	sn, rej := seen{}, map[string]map[string]bool{}
	for _, id := range drain(t, sn, rej, "brands", "", c.List(ctx, stream.EndpointBrands, ListQuery{})) {
		bd, err := c.Detail(ctx, stream.EndpointBrand, id)
		if err != nil {
			t.Fatalf("brand %s: %v", id, err)
		}
		if got := gjson.GetBytes(bd.Raw, "brand_info.id"); bd.Key != string(id) || strings.TrimSpace(got.String()) != string(id) {
			t.Errorf("brand detail %s: key %q, brand_info.id %s", id, bd.Key, got.Raw)
		}
		sn.add("brand_details", bd.Key)
		for _, ep := range brandChildLists() {
			drain(t, sn, rej, ep.InventoryName(), "", c.List(ctx, ep.Name, ListQuery{ID: id}))
		}
	}
	projectIDs := drain(t, sn, rej, "projects", "", c.List(ctx, stream.EndpointProjects, ListQuery{}))
	for _, id := range projectIDs[:min(3, len(projectIDs))] {
		if p, err := c.Detail(ctx, stream.EndpointProject, id); err != nil || recordKey("projects", "", Record{Raw: p.Raw}) != string(id) {
			t.Fatalf("project %s: %v", id, err)
		}
	}
	drain(t, sn, rej, "budgets", "", c.List(ctx, stream.EndpointBudgets, ListQuery{}))
	drain(t, sn, rej, "invoices", "", c.List(ctx, stream.EndpointInvoices, ListQuery{}))
	drain(t, sn, rej, "collections", "", c.List(ctx, stream.EndpointCollections, ListQuery{}))
	drain(t, sn, rej, "payments", "", c.List(ctx, stream.EndpointPayments, ListQuery{}))
	drain(t, sn, rej, "profitability", "project", c.List(ctx, stream.EndpointProfitability, ListQuery{Params: map[string]string{"level": "project"}}))
	drain(t, sn, rej, "profitability", "brand", c.List(ctx, stream.EndpointProfitability, ListQuery{Params: map[string]string{"level": "brand"}}))
	drain(t, sn, rej, "summary", "", c.List(ctx, stream.EndpointAgencySummary, ListQuery{}))
	var all []int64
	for u := 1; u <= users; u++ {
		all = append(all, int64(u))
	}
	drain(t, sn, rej, "communications", "", c.Communications(ctx, CommsQuery{UserIDs: all, PerPage: 100}))
	return sn, rej
}

// compare checks that every record of the truth was delivered exactly once,
// that nothing else was, and that only bad records were rejected.
func compare(t *testing.T, truth map[string]map[string]bool, sn seen, rej map[string]map[string]bool) {
	t.Helper()
	for stream, keys := range truth {
		got := sn[stream]
		if len(got) != len(keys) {
			t.Errorf("%s: %d distinct records delivered, truth has %d", stream, len(got), len(keys))
		}
		for k, bad := range keys {
			if got[k] != 1 {
				t.Errorf("%s %s delivered %d times", stream, k, got[k])
			}
			if rej[stream][k] && !bad {
				t.Errorf("%s %s rejected although it is good", stream, k)
			}
		}
		for k := range got {
			if _, ok := keys[k]; !ok {
				t.Errorf("%s %s delivered but not in the truth", stream, k)
			}
		}
	}
	for stream := range sn {
		if truth[stream] == nil {
			t.Errorf("stream %s delivered but not in the truth", stream)
		}
	}
}

func sandboxClient(t *testing.T, s *sandbox.Server, mut func(*Options)) *Client {
	o := fastOptions(s.APIURL(), s.CommsURL())
	if mut != nil {
		mut(&o)
	}
	return newClient(t, o)
}

func TestSandboxEveryEndpointEveryVariant(t *testing.T) {
	configs := [][]string{nil}
	for _, v := range sandbox.Variants() {
		configs = append(configs, []string{v.Name})
	}
	configs = append(configs, []string{
		sandbox.VariantRowsShape, sandbox.VariantWrapped, sandbox.VariantNumericIDs, sandbox.VariantStringMoney,
		sandbox.VariantRecipientsArray, sandbox.VariantFromObject, sandbox.VariantEmptyAsObject, sandbox.VariantSmallPage,
		sandbox.VariantHasAttachments, sandbox.VariantOutsiderRecipients,
	})
	for _, vs := range configs {
		name := "canonical"
		if vs != nil {
			name = fmt.Sprint(vs)
		}
		t.Run(name, func(t *testing.T) {
			s := startSandbox(t, func(o *sandbox.Options) { o.Variants = vs; o.BadRecordRate = 0.02 })
			c := sandboxClient(t, s, func(o *Options) {
				if len(vs) == 1 {
					o.Streams = pagingFor(t, sandbox.PagingSetting(vs[0]))
				}
			})
			sn, rej := extractAll(t, c, 15)
			truth := truthKeys(t, s)
			compare(t, truth, sn, rej)
			// Bad values are the transform's to reject: extract delivers
			// every record, bad ones included, and rejects none.
			for stream, keys := range rej {
				if len(keys) > 0 {
					t.Errorf("%s: %d records rejected by extract, want 0", stream, len(keys))
				}
			}
		})
	}
}

func TestSandboxCommunicationFields(t *testing.T) {
	s := startSandbox(t, func(o *sandbox.Options) {
		o.Variants = []string{sandbox.VariantOutsiderRecipients, sandbox.VariantHasAttachments}
	})
	c := sandboxClient(t, s, nil)
	var users []int64
	for u := int64(1); u <= 15; u++ {
		users = append(users, u)
	}
	keyed, outsiders, attachments, microseconds := 0, 0, 0, 0
	for p, err := range c.Communications(context.Background(), CommsQuery{UserIDs: users}) {
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Rejects) != 0 || !p.Paged || p.PerPage != 1000 {
			t.Fatalf("page %+v", p)
		}
		for _, r := range p.Records {
			e := gjson.GetBytes(r.Raw, "email")
			at := e.Get("email_at").Str
			if r.Key == "" || !e.Get("subject").Exists() || !e.Get("mailbox_id").Exists() || len(gjson.GetBytes(r.Raw, "users.from").Array()) != 1 {
				t.Fatalf("record %s: %s", r.Key, r.Raw)
			}
			if strings.HasSuffix(at, "Z") && len(at) == len("2006-01-02T15:04:05.000000Z") && !strings.HasSuffix(at, ".000000Z") {
				microseconds++
			}
			if e.Get("has_attachments").Raw == "1" {
				attachments++
			}
			for _, role := range []string{"to", "cc", "bcc"} {
				gjson.GetBytes(r.Raw, "users."+role).ForEach(func(k, u gjson.Result) bool {
					if k.Type == gjson.String && stream.IsInteger(k.Str) {
						keyed++
					} else {
						outsiders++
					}
					return true
				})
			}
		}
	}
	if keyed == 0 || outsiders == 0 || attachments == 0 || microseconds == 0 {
		t.Errorf("keyed %d outsiders %d attachments %d microsecond stamps %d", keyed, outsiders, attachments, microseconds)
	}
}

func TestSandboxFaultsSurvivedExactlyOnce(t *testing.T) {
	s := startSandbox(t, func(o *sandbox.Options) {
		o.Emails = 1500
		o.Faults = sandbox.Faults{Err500: 0.05, HTML502: 0.05, Err503: 0.03, Truncate: 0.06, Slow: 0.03, Drop: 0.05, Spurious429: 0.05}
		o.SlowDelay = 2 * time.Second
	})
	c := sandboxClient(t, s, func(o *Options) { o.Timeout, o.MaxAttempts = 400*time.Millisecond, 12 })
	sn, rej := extractAll(t, c, 15)
	compare(t, truthKeys(t, s), sn, rej)
	st := s.Stats()
	var faults int64
	for _, n := range st.Faults {
		faults += n
	}
	if faults < 5 {
		t.Errorf("only %d faults injected: %v", faults, st.Faults)
	}
	t.Logf("%d requests, faults %v", st.Requests, st.Faults)
}

func TestSandboxRateNeverExceeded(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 10s")
	}
	s := startSandbox(t, func(o *sandbox.Options) {
		o.NoLimits = false
		o.Rate = 10
		o.DailyQuota = 10000
		o.LimitsScope = sandbox.ScopeShared
	})
	c := sandboxClient(t, s, func(o *Options) { o.RateLimit, o.SpacingMargin = 0, 0 }) // the defaults: 10/s
	ctx := context.Background()
	pid := firstID(t, "projects", c.List(ctx, stream.EndpointProjects, ListQuery{}))
	for i := range 99 {
		var err error
		if i%2 == 0 {
			_, err = c.CommunicationsPage(ctx, CommsQuery{UserIDs: []int64{1}, PerPage: 5}, 1)
		} else {
			_, err = c.Detail(ctx, stream.EndpointProject, pid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	st := s.Stats()
	if st.Requests != 100 || st.RateLimited != 0 || st.ByStatus["200"] != 100 {
		t.Errorf("requests %d, rate limited %d, by status %v", st.Requests, st.RateLimited, st.ByStatus)
	}
}

func TestSandboxDailyQuotaStops(t *testing.T) {
	s := startSandbox(t, func(o *sandbox.Options) { o.NoLimits = false; o.Rate = 1000; o.DailyQuota = 3 })
	c := sandboxClient(t, s, nil)
	bid := firstID(t, "brands", c.List(context.Background(), stream.EndpointBrands, ListQuery{}))
	var err error
	for i := 1; i < 5; i++ {
		if _, err = c.Detail(context.Background(), stream.EndpointBrand, bid); err != nil {
			if i != 3 {
				t.Fatalf("request %d: %v", i+1, err)
			}
			break
		}
	}
	if !errors.Is(err, ErrDailyQuota) {
		t.Fatalf("err %v", err)
	}
	if st := s.Stats(); st.QuotaExceeded != 1 || st.Requests != 4 {
		t.Errorf("quota exceeded %d, requests %d: the daily quota must not be retried", st.QuotaExceeded, st.Requests)
	}
}

func TestSandboxAuthErrors(t *testing.T) {
	s := startSandbox(t, func(o *sandbox.Options) { o.ForeignKey = "foreign-agency-key-000" })
	bad := sandboxClient(t, s, func(o *Options) { o.APIKey, o.CommsKey = "wrong-key-123456", "wrong-key-654321" })
	if _, err := collect(t, bad.List(context.Background(), stream.EndpointBrands, ListQuery{})); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("brands with a wrong key: %v", err)
	}
	if _, err := bad.CommunicationsPage(context.Background(), CommsQuery{UserIDs: []int64{1}}, 1); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("communications with a wrong key: %v", err)
	}
	c := sandboxClient(t, s, nil)
	bid := firstID(t, "brands", c.List(context.Background(), stream.EndpointBrands, ListQuery{}))
	foreign := sandboxClient(t, s, func(o *Options) { o.APIKey = "foreign-agency-key-000" })
	if _, err := foreign.Detail(context.Background(), stream.EndpointBrand, bid); !errors.Is(err, ErrForbidden) {
		t.Errorf("foreign key: %v", err)
	}
	if _, err := c.Detail(context.Background(), stream.EndpointBrand, ID(strconv.Itoa(999999))); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing brand: %v", err)
	}
	if _, err := c.CommunicationsPage(context.Background(), CommsQuery{}, 1); !errors.Is(err, ErrBadRequest) || !bytes.Contains([]byte(err.Error()), []byte("user_id")) {
		t.Errorf("communications without users: %v", err)
	}
}

// firstID returns the id of the first record of a list.
func firstID(t *testing.T, stream string, seq func(func(*Page, error) bool)) ID {
	t.Helper()
	for p, err := range seq {
		if err != nil || len(p.Records) == 0 {
			t.Fatalf("first id: %v", err)
		}
		return ID(recordKey(stream, "", p.Records[0]))
	}
	t.Fatal("first id: empty list")
	return ""
}

// TestSandboxValidation422: under the sandbox's php-422 variant a bad
// parameter is a 422 naming it: ErrValidation with the field, sent once.
func TestSandboxValidation422(t *testing.T) {
	s := startSandbox(t, func(o *sandbox.Options) { o.Variants = []string{sandbox.VariantPHP422} })
	c := sandboxClient(t, s, func(o *Options) { o.MaxAttempts = 3 })
	before := s.Stats().Requests
	_, err := c.CommunicationsPage(context.Background(), CommsQuery{}, 1)
	var ae *APIError
	if !errors.Is(err, ErrValidation) || !errors.As(err, &ae) || ae.Status != 422 || len(ae.Fields) != 1 || ae.Fields[0].Field != "user_id" {
		t.Fatalf("communications without users: %v (%+v)", err, ae)
	}
	_, err = collect(t, c.List(context.Background(), stream.EndpointProfitability, ListQuery{Params: map[string]string{"level": "galaxy"}}))
	if !errors.As(err, &ae) || !errors.Is(err, ErrValidation) || len(ae.Fields) != 1 || ae.Fields[0].Field != "level" {
		t.Fatalf("profitability of a bad level: %v", err)
	}
	if n := s.Stats().Requests - before; n != 2 {
		t.Errorf("%d requests, want 2 (a validation error is not retried)", n)
	}
}

// pagingFor is the declarations paging as setting ("*=style:option=value…",
// AGENCY_PAGING's form for every list) says; nil for "".
func pagingFor(t *testing.T, setting string) []*stream.Stream {
	t.Helper()
	if setting == "" {
		return nil
	}
	name, value, _ := strings.Cut(setting, "=")
	parts := strings.Split(value, ":")
	o := stream.PagingOverride{Style: stream.PageStyle(parts[0])}
	for _, opt := range parts[1:] {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "max":
			o.Max, _ = strconv.Atoi(v)
		case "size":
			o.Size = v
		default:
			t.Fatalf("option %s of %q", k, setting)
		}
	}
	out, err := stream.ApplyPaging(stream.All(), stream.PagingOverrides{name: o})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSandboxPagingVariantsNeverSilentlyShort: a client paging as the spec
// says, against servers that page another way, never takes a listing it
// did not see whole for a complete one: every listing is either proven
// complete and holds every row of the truth, or not proven.
func TestSandboxPagingVariantsNeverSilentlyShort(t *testing.T) {
	for _, v := range sandbox.Variants() {
		if sandbox.PagingSetting(v.Name) == "" {
			continue
		}
		t.Run(v.Name, func(t *testing.T) {
			s := startSandbox(t, func(o *sandbox.Options) { o.Variants = []string{v.Name}; o.Brands, o.ProjectsPerBrand = 35, 2 })
			c := sandboxClient(t, s, nil)
			truth := truthKeys(t, s)
			ctx := context.Background()
			unproven := 0
			for _, l := range []struct {
				stream string
				seq    func(func(*Page, error) bool)
			}{
				{"brands", c.List(ctx, stream.EndpointBrands, ListQuery{})}, {"projects", c.List(ctx, stream.EndpointProjects, ListQuery{})},
				{"budgets", c.List(ctx, stream.EndpointBudgets, ListQuery{})}, {"invoices", c.List(ctx, stream.EndpointInvoices, ListQuery{})},
				{"collections", c.List(ctx, stream.EndpointCollections, ListQuery{})}, {"payments", c.List(ctx, stream.EndpointPayments, ListQuery{})},
				{"summary", c.List(ctx, stream.EndpointAgencySummary, ListQuery{})},
			} {
				keys := map[string]bool{}
				var end *ListEnd
				for p, err := range l.seq {
					if err != nil {
						t.Fatalf("%s: %v", l.stream, err)
					}
					for _, r := range p.Records {
						keys[recordKey(l.stream, "", r)] = true
					}
					end = p.End
				}
				switch {
				case end == nil:
					t.Errorf("%s: no verdict", l.stream)
				case end.Proven && len(keys) != len(truth[l.stream]):
					t.Errorf("%s: proven complete (%s) with %d of the %d rows", l.stream, end.Proof, len(keys), len(truth[l.stream]))
				case !end.Proven:
					unproven++
				}
			}
			if unproven == 0 && v.Name != sandbox.VariantSilentCap {
				t.Errorf("every listing proven complete under the spec's paging against %s", v.Name)
			}
		})
	}
}
