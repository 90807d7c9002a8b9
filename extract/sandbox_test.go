package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
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

func addPage[T any, P decodable[T]](sn seen, stream string, p *Page[T], rejected map[string]map[string]bool) {
	for i := range p.Records {
		sn.add(stream, P(&p.Records[i]).recordKey())
	}
	for _, r := range p.Rejects {
		sn.add(stream, r.Key)
		if rejected[stream] == nil {
			rejected[stream] = map[string]bool{}
		}
		rejected[stream][r.Key] = true
	}
}

func drain[T any, P decodable[T]](t *testing.T, sn seen, rej map[string]map[string]bool, stream string, seq func(func(*Page[T], error) bool)) {
	t.Helper()
	for p, err := range seq {
		if err != nil {
			t.Fatalf("%s: %v", stream, err)
		}
		addPage[T, P](sn, stream, p, rej)
	}
}

// extractAll reads every stream of the sandbox through the client.
func extractAll(t *testing.T, c *Client, users int) (seen, map[string]map[string]bool) {
	t.Helper()
	ctx := context.Background()
	sn, rej := seen{}, map[string]map[string]bool{}
	var brandIDs []ID
	for p, err := range c.Brands(ctx) {
		if err != nil {
			t.Fatalf("brands: %v", err)
		}
		addPage[Brand](sn, "brands", p, rej)
		for _, b := range p.Records {
			brandIDs = append(brandIDs, b.ID)
		}
	}
	for _, id := range brandIDs {
		bd, err := c.Brand(ctx, id)
		if err != nil {
			t.Fatalf("brand %s: %v", id, err)
		}
		if bd.Brand.ID != id || len(bd.Raw) == 0 {
			t.Errorf("brand detail %s: %+v", id, bd.Brand)
		}
		sn.add("brand_details", string(bd.Brand.ID))
		drain[Contact](t, sn, rej, "contacts", c.BrandContacts(ctx, id))
	}
	var projectIDs []ID
	for p, err := range c.Projects(ctx, ProjectQuery{}) {
		if err != nil {
			t.Fatalf("projects: %v", err)
		}
		addPage[Project](sn, "projects", p, rej)
		for _, r := range p.Records {
			projectIDs = append(projectIDs, r.ID)
		}
	}
	for _, id := range projectIDs[:min(3, len(projectIDs))] {
		if p, err := c.Project(ctx, id); err != nil || p.ID != id {
			t.Fatalf("project %s: %v", id, err)
		}
	}
	drain[Budget](t, sn, rej, "budgets", c.Budgets(ctx, FinanceQuery{}))
	drain[Invoice](t, sn, rej, "invoices", c.Invoices(ctx, FinanceQuery{}))
	drain[Collection](t, sn, rej, "collections", c.Collections(ctx, FinanceQuery{}))
	drain[Payment](t, sn, rej, "payments", c.Payments(ctx, FinanceQuery{}))
	drain[Profitability](t, sn, rej, "profitability", c.Profitability(ctx, "project"))
	drain[Profitability](t, sn, rej, "profitability", c.Profitability(ctx, "brand"))
	drain[AgencySummary](t, sn, rej, "summary", c.AgencySummary(ctx))
	var all []int64
	for u := 1; u <= users; u++ {
		all = append(all, int64(u))
	}
	drain[Communication](t, sn, rej, "communications", c.Communications(ctx, CommsQuery{UserIDs: all, PerPage: 100}))
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
			c := sandboxClient(t, s, nil)
			sn, rej := extractAll(t, c, 15)
			truth := truthKeys(t, s)
			compare(t, truth, sn, rej)
			bad, rejected := 0, 0
			for stream, keys := range truth {
				for k, b := range keys {
					if b {
						bad++
						if rej[stream][k] {
							rejected++
						}
					}
				}
			}
			if bad == 0 || rejected == 0 {
				t.Errorf("bad records %d, rejected %d", bad, rejected)
			}
			t.Logf("bad records %d, rejected %d", bad, rejected)
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
	withIDs, outsiders, attachments, microseconds := 0, 0, 0, 0
	for p, err := range c.Communications(context.Background(), CommsQuery{UserIDs: users}) {
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Rejects) != 0 || !p.Paged || p.PerPage != 1000 {
			t.Fatalf("page %+v", p)
		}
		for _, r := range p.Records {
			if r.Email.Subject == nil || r.Email.EmailAt.IsZero() || r.Email.EmailAt.Location() != time.UTC || len(r.Users.From) != 1 || r.Email.MailboxID == "" {
				t.Fatalf("record %d: %+v", r.RecordID, r)
			}
			if r.Email.EmailAt.Nanosecond()%1000 == 0 && r.Email.EmailAt.Nanosecond() != 0 {
				microseconds++
			}
			if r.Email.HasAttachments {
				attachments++
			}
			for _, u := range slices.Concat(r.Users.To, r.Users.CC, r.Users.BCC) {
				if u.PlatformUserID != nil {
					withIDs++
				} else {
					outsiders++
				}
			}
		}
	}
	if withIDs == 0 || outsiders == 0 || attachments == 0 || microseconds == 0 {
		t.Errorf("keyed %d outsiders %d attachments %d microsecond stamps %d", withIDs, outsiders, attachments, microseconds)
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
	pid := firstID(t, c.Projects(ctx, ProjectQuery{}))
	for i := range 99 {
		var err error
		if i%2 == 0 {
			_, err = c.CommunicationsPage(ctx, CommsQuery{UserIDs: []int64{1}, PerPage: 5}, 1)
		} else {
			_, err = c.Project(ctx, pid)
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
	bid := firstID(t, c.Brands(context.Background()))
	var err error
	for i := 1; i < 5; i++ {
		if _, err = c.Brand(context.Background(), bid); err != nil {
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
	if _, err := collect(t, bad.Brands(context.Background())); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("brands with a wrong key: %v", err)
	}
	if _, err := bad.CommunicationsPage(context.Background(), CommsQuery{UserIDs: []int64{1}}, 1); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("communications with a wrong key: %v", err)
	}
	c := sandboxClient(t, s, nil)
	bid := firstID(t, c.Brands(context.Background()))
	foreign := sandboxClient(t, s, func(o *Options) { o.APIKey = "foreign-agency-key-000" })
	if _, err := foreign.Brand(context.Background(), bid); !errors.Is(err, ErrForbidden) {
		t.Errorf("foreign key: %v", err)
	}
	if _, err := c.Brand(context.Background(), ID(strconv.Itoa(999999))); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing brand: %v", err)
	}
	if _, err := c.CommunicationsPage(context.Background(), CommsQuery{}, 1); !errors.Is(err, ErrBadRequest) || !bytes.Contains([]byte(err.Error()), []byte("user_id")) {
		t.Errorf("communications without users: %v", err)
	}
}

// firstID returns the id of the first record of a list.
func firstID[T any, P decodable[T]](t *testing.T, seq func(func(*Page[T], error) bool)) ID {
	t.Helper()
	for p, err := range seq {
		if err != nil || len(p.Records) == 0 {
			t.Fatalf("first id: %v", err)
		}
		return ID(P(&p.Records[0]).recordKey())
	}
	t.Fatal("first id: empty list")
	return ""
}
