package config

import (
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// valueError is a decoding problem that is safe to show (it never quotes a secret).
type valueError struct{ problem string }

func (e *valueError) Error() string { return e.problem }

// listItems yields the items of a sep-separated list, trimmed of spaces,
// skipping the empty ones.
func listItems(v, sep string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for item := range strings.SplitSeq(v, sep) {
			if item = strings.TrimSpace(item); item != "" && !yield(item) {
				return
			}
		}
	}
}

// parsePairs reads comma-separated "name=value" pairs into a map (nil when
// there are none). problem says what is wrong with one pair, given the pair,
// its halves and whether it has a "="; "" when nothing is. twice is the
// format of the problem of a name given twice.
func parsePairs(v, twice string, problem func(pair, name, value string, ok bool) string) (map[string]string, error) {
	out := map[string]string{}
	for pair := range listItems(v, ",") {
		name, value, ok := cutTrimmed(pair, "=")
		if p := problem(pair, name, value, ok); p != "" {
			return nil, &valueError{p}
		}
		if _, dup := out[name]; dup {
			return nil, &valueError{fmt.Sprintf(twice, name)}
		}
		out[name] = value
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// cutTrimmed is strings.Cut with both halves trimmed of spaces.
func cutTrimmed(s, sep string) (before, after string, found bool) {
	before, after, found = strings.Cut(s, sep)
	return strings.TrimSpace(before), strings.TrimSpace(after), found
}

// Secret holds a credential. Every way of printing it — fmt verbs, JSON, slog,
// zap's reflection — shows "[REDACTED]"; only Value returns the text.
type Secret struct{ v string }

// NewSecret wraps a value (tests and programmatic configuration).
func NewSecret(v string) Secret { return Secret{v: v} }

// EnvDecode implements envconfig.Decoder.
func (s *Secret) EnvDecode(v string) error {
	s.v = v
	return nil
}

// Value returns the secret's text. Never log it.
func (s Secret) Value() string { return s.v }

// String implements fmt.Stringer with a redacted text.
func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return "[REDACTED]"
}

// GoString implements fmt.GoStringer with a redacted text.
func (s Secret) GoString() string { return `config.Secret("` + s.String() + `")` }

// Format implements fmt.Formatter so that every verb prints the redacted text.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// MarshalJSON implements json.Marshaler with a redacted text.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(s.String())), nil }

// MarshalText implements encoding.TextMarshaler with a redacted text.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// LogValue implements slog.LogValuer with a redacted text.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// UserIDs is a set of platform user ids, parsed from "1-300,412". It is kept
// sorted and without duplicates.
type UserIDs []int64

// maxUserIDs bounds what a range may expand to, so a typo cannot exhaust memory.
const maxUserIDs = 100_000

// EnvDecode implements envconfig.Decoder.
func (u *UserIDs) EnvDecode(v string) error {
	ids, err := ParseUserIDs(v)
	if err != nil {
		return err
	}
	*u = ids
	return nil
}

// ParseUserIDs parses comma-separated ids and inclusive ranges ("1-300,412").
// An empty string is an empty set.
func ParseUserIDs(v string) (UserIDs, error) {
	var out UserIDs
	for part := range listItems(v, ",") {
		lo, hi, isRange := cutTrimmed(part, "-")
		first, err := strconv.ParseInt(lo, 10, 64)
		if err != nil || first <= 0 {
			return nil, &valueError{fmt.Sprintf("%q is not a positive id", part)}
		}
		last := first
		if isRange {
			last, err = strconv.ParseInt(hi, 10, 64)
			if err != nil || last < first {
				return nil, &valueError{fmt.Sprintf("%q is not a range low-high", part)}
			}
		}
		if last-first >= maxUserIDs || len(out)+int(last-first+1) > maxUserIDs {
			return nil, &valueError{fmt.Sprintf("more than %d ids", maxUserIDs)}
		}
		for id := first; id <= last; id++ {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// String renders the set compactly with ranges, e.g. "1-300,412".
func (u UserIDs) String() string {
	var b strings.Builder
	for i := 0; i < len(u); {
		j := i
		for j+1 < len(u) && u[j+1] == u[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(u[i], 10))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.FormatInt(u[j], 10))
		}
		i = j + 1
	}
	return b.String()
}

// Date is a calendar date (YYYY-MM-DD), held as UTC midnight.
type Date struct{ time.Time }

// EnvDecode implements envconfig.Decoder.
func (d *Date) EnvDecode(v string) error {
	if v == "" {
		d.Time = time.Time{}
		return nil
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		return &valueError{fmt.Sprintf("%q is not a date", v)}
	}
	d.Time = t
	return nil
}

// String renders the date as YYYY-MM-DD, or "" when unset.
func (d Date) String() string {
	if d.IsZero() {
		return ""
	}
	return d.Format(time.DateOnly)
}

// Percent is a share from 0 to 1, parsed from "5%" or "0.05".
type Percent float64

// EnvDecode implements envconfig.Decoder.
func (p *Percent) EnvDecode(v string) error {
	s := strings.TrimSpace(v)
	scale := 1.0
	if t, ok := strings.CutSuffix(s, "%"); ok {
		s, scale = strings.TrimSpace(t), 100
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f/scale > 1 {
		return &valueError{fmt.Sprintf("%q is not a percentage from 0%% to 100%%", v)}
	}
	*p = Percent(f / scale)
	return nil
}

// String renders the share as a percentage, e.g. "5%".
func (p Percent) String() string { return strconv.FormatFloat(float64(p)*100, 'f', -1, 64) + "%" }

// Location is a time zone loaded by name.
type Location struct{ *time.Location }

// EnvDecode implements envconfig.Decoder.
func (l *Location) EnvDecode(v string) error {
	loc, err := time.LoadLocation(v)
	if err != nil || v == "" || v == "Local" {
		return &valueError{fmt.Sprintf("%q is not an IANA time zone", v)}
	}
	l.Location = loc
	return nil
}
