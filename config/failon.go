package config

import (
	"fmt"
	"slices"
	"strings"
)

// FailOnKinds are the kinds of warnings SYNC_FAIL_ON may name, as the
// engine names them (engine.WarningKind): coverage warnings and notes,
// open rejected records, new source fields.
var FailOnKinds = []string{"warnings", "rejects", "new_fields"}

// FailOn is SYNC_FAIL_ON: the kinds of warnings that make a sync that ended
// warning exit 1 instead of 0, comma-separated, each once.
type FailOn []string

// EnvDecode implements envconfig.Decoder.
func (f *FailOn) EnvDecode(v string) error {
	var out FailOn
	for part := range strings.SplitSeq(v, ",") {
		k := strings.TrimSpace(part)
		switch {
		case k == "" && strings.TrimSpace(v) == "":
			continue
		case k == "":
			return &valueError{"an empty kind (two commas in a row?)"}
		case !slices.Contains(FailOnKinds, k):
			return &valueError{fmt.Sprintf("unknown kind %q (known: %s)", k, strings.Join(FailOnKinds, ", "))}
		case slices.Contains(out, k):
			return &valueError{fmt.Sprintf("kind %q twice", k)}
		}
		out = append(out, k)
	}
	*f = out
	return nil
}

// Has reports whether kind is named.
func (f FailOn) Has(kind string) bool { return slices.Contains(f, kind) }

// String renders the kinds comma-separated.
func (f FailOn) String() string { return strings.Join(f, ",") }
