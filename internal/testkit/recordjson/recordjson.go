// Package recordjson renders the typed records of package fixture as the service's
// canonical JSON and turns them into transform batches, for tests that
// build pages from typed fixtures: the generic transform reads only a
// record's raw JSON, so a fixture must be one.
package recordjson

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

type obj map[string]any

// Record renders a fixture record (any type of package fixture but a brand of
// the list: see Brand) as the service's JSON, member by member as the
// package's conventions say.
func Record[T any](r T) json.RawMessage { return marshal(value(reflect.ValueOf(r), "")) }

// Brand renders a brand of the list: {"brand_info": {...}}.
func Brand(b fixture.Brand) json.RawMessage {
	return marshal(obj{"brand_info": value(reflect.ValueOf(b), "")})
}

func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of plain values always marshal
	}
	return b
}

// object renders the fields of struct v as package fixture's conventions say:
// each under its api tag's name or its own name in snake_case.
func object(v reflect.Value) obj {
	o := obj{}
	t := v.Type()
	for i := range t.NumField() {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("api"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = snakeCase(t.Field(i).Name)
		}
		f := v.Field(i)
		if !slices.Contains(strings.Split(opts, ","), "always") && isZero(f) {
			continue
		}
		if calendarDate(name) {
			opts += ",date"
		}
		o[name] = value(f, opts)
	}
	return o
}

// calendarDate reports whether member name is one of the spec's calendar
// dates (YYYY-MM-DD); every other time is an instant.
func calendarDate(name string) bool {
	switch name {
	case "date_created", "start_date", "deadline", "due_date", "period_start", "period_end", "issue_date", "collected_on", "paid_on":
		return true
	}
	return false
}

// snakeCase turns a Go field name into its member name: BrandID is brand_id,
// BCC is bcc.
func snakeCase(name string) string {
	var b strings.Builder
	for i, r := range name {
		upper := unicode.IsUpper(r)
		if upper && i > 0 && (!unicode.IsUpper(rune(name[i-1])) || i+1 < len(name) && unicode.IsLower(rune(name[i+1]))) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// isZero reports whether v is absent: nil, empty, or a zero value (by its
// IsZero method where it has one, as a time does).
func isZero(v reflect.Value) bool {
	if z, ok := v.Interface().(interface{ IsZero() bool }); ok && v.Kind() != reflect.Pointer {
		return z.IsZero()
	}
	return v.IsZero()
}

// value renders v with the options of its field's api tag.
func value(v reflect.Value, opts string) any {
	has := func(opt string) bool { return slices.Contains(strings.Split(opts, ","), opt) }
	switch x := v.Interface().(type) {
	case fixture.Decimal:
		return decimal(x)
	case time.Time:
		if has("date") {
			return x.Format("2006-01-02")
		}
		return x.Format(time.RFC3339Nano)
	case json.RawMessage:
		return x
	case []fixture.Participant:
		return participants(x)
	case bool:
		if has("number") {
			return map[bool]int{false: 0, true: 1}[x]
		}
		return x
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return value(v.Elem(), opts)
	case reflect.Struct:
		return object(v)
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = value(v.Index(i), opts)
		}
		return out
	default:
		return v.Interface()
	}
}

// decimal writes a decimal as a JSON number, or as a string when it is not
// one (a fixture of a bad amount).
func decimal(d fixture.Decimal) any {
	if json.Valid([]byte(d)) && d[0] != '"' {
		return json.Number(d)
	}
	return string(d)
}

// participants renders a recipient list as the spec does: [] when empty, an
// object keyed by platform user id when one has an id (others keyed by
// their address), an array otherwise.
func participants(list []fixture.Participant) any {
	keyed := false
	for _, p := range list {
		keyed = keyed || p.PlatformUserID != nil
	}
	if !keyed {
		out := make([]obj, len(list))
		for i, p := range list {
			out[i] = object(reflect.ValueOf(p))
		}
		return out
	}
	out := obj{}
	for _, p := range list {
		k := p.Email
		if p.PlatformUserID != nil {
			k = strconv.FormatInt(*p.PlatformUserID, 10)
		}
		out[k] = object(reflect.ValueOf(p))
	}
	return out
}

func records[T any](list []T, key func(T) string, raw func(T) json.RawMessage) []stream.Record {
	out := make([]stream.Record, len(list))
	for i, r := range list {
		out[i] = stream.Record{Key: key(r), Raw: raw(r)}
	}
	return out
}

func declared(name string) *stream.Stream {
	s, ok := stream.Lookup(name)
	if !ok {
		panic("no stream " + name)
	}
	return s
}

func noKey[T any](T) string { return "" }

// Brands is the batch of a brands list page.
func Brands(list []fixture.Brand, snapshot time.Time) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("brands"), Endpoint: stream.EndpointBrands, Snapshot: snapshot},
		records(list, noKey, Brand))
}

// BrandDetails is the batch of brand details.
func BrandDetails(list []fixture.BrandDetail, snapshot time.Time) transform.Batch {
	return batch("brands", transform.Input{Endpoint: stream.EndpointBrand, Snapshot: snapshot}, list)
}

// Contacts is the batch of a page of brandID's contacts.
func Contacts(brandID extract.ID, list []fixture.Contact) transform.Batch {
	return batch("brands", transform.Input{Endpoint: stream.EndpointBrandContacts, Params: map[string]string{"brand_id": string(brandID)}}, list)
}

// Projects is the batch of a projects list page.
func Projects(list []fixture.Project) transform.Batch {
	return batch("projects", transform.Input{Endpoint: stream.EndpointProjects}, list)
}

// ProjectDetails is the batch of project details.
func ProjectDetails(list []fixture.Project) transform.Batch {
	return batch("projects", transform.Input{Endpoint: stream.EndpointProject}, list)
}

// batch is the batch of list's records (unkeyed) as stream streamName
// answers them at in.Endpoint.
func batch[T any](streamName string, in transform.Input, list []T) transform.Batch {
	in.Stream = declared(streamName)
	return transform.Records(in, records(list, noKey, Record[T]))
}

// Budgets is the batch of a budgets page.
func Budgets(list []fixture.Budget) transform.Batch {
	return batch("finance", transform.Input{Endpoint: stream.EndpointBudgets}, list)
}

// Invoices is the batch of an invoices page.
func Invoices(list []fixture.Invoice) transform.Batch {
	return batch("finance", transform.Input{Endpoint: stream.EndpointInvoices}, list)
}

// Collections is the batch of a collections page.
func Collections(list []fixture.Collection) transform.Batch {
	return batch("finance", transform.Input{Endpoint: stream.EndpointCollections}, list)
}

// Payments is the batch of a payments page.
func Payments(list []fixture.Payment) transform.Batch {
	return batch("finance", transform.Input{Endpoint: stream.EndpointPayments}, list)
}

// Profitabilities is the batch of profitability rows (each names its level).
func Profitabilities(list []fixture.Profitability) transform.Batch {
	return batch("finance", transform.Input{Endpoint: stream.EndpointProfitability}, list)
}

// AgencySummaries is the batch of agency summary months.
func AgencySummaries(list []fixture.AgencySummary) transform.Batch {
	return batch("finance", transform.Input{Endpoint: stream.EndpointAgencySummary}, list)
}

// Communications is the batch of a communications page, rows keyed by
// record id.
func Communications(list []fixture.Communication) transform.Batch {
	return transform.Records(transform.Input{Stream: declared("communications"), Endpoint: stream.EndpointCommunications},
		records(list, func(c fixture.Communication) string { return strconv.FormatInt(c.RecordID, 10) }, Record[fixture.Communication]))
}
