package transform

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// CleanJSON returns raw as a jsonb column can store it: unchanged when it is
// valid JSON that PostgreSQL accepts; re-encoded with NUL characters and lone
// surrogates replaced by U+FFFD (and invalid UTF-8 repaired) when it needs
// that; a JSON string of the bytes when they are not JSON at all, or JSON
// nested deeper than encoding/json's 10 000 levels (PostgreSQL 15's jsonb
// takes about 13 000 with the default max_stack_depth; extract keeps
// records up to 9 000 and rejects deeper ones, whose payload lands here as
// such a string); JSON null when empty.
func CleanJSON(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null")
	}
	if !jsonbRisky(raw) && json.Valid(raw) {
		return raw
	}
	if json.Valid(raw) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			if out, err := json.Marshal(scrub(v)); err == nil {
				return out
			}
		}
	}
	out, _ := json.Marshal(stream.CleanText(string(raw))) // a string always marshals
	return out
}

// recordJSON is CleanJSON for the Raw of a record decoded by extract, which
// is one valid JSON value: the decoder checks every record it keeps (its
// fuzz tests hold it to that), so the syntax is not checked again here; only
// what a jsonb column refuses (NUL characters, lone surrogates, invalid
// UTF-8) is looked for, and such a record goes through CleanJSON. On a page
// of e-mails this halves the cost of the transform.
func recordJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || jsonbRisky(raw) {
		return CleanJSON(raw)
	}
	return raw
}

// jsonbRisky reports whether raw may hold what PostgreSQL's jsonb refuses:
// invalid UTF-8, an escaped NUL or an escaped surrogate (lone or paired;
// pairs are rare and re-encoding keeps them).
func jsonbRisky(raw []byte) bool {
	if !utf8.Valid(raw) {
		return true
	}
	// One look at each backslash for `\u0000`, `\ud` or `\uD`.
	for i := 0; ; i++ {
		j := bytes.IndexByte(raw[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		if i+2 < len(raw) && raw[i+1] == 'u' && (raw[i+2] == 'd' || raw[i+2] == 'D' ||
			i+5 < len(raw) && string(raw[i+2:i+6]) == "0000") {
			return true
		}
	}
}

// scrub replaces NUL characters in every string and object key of v.
func scrub(v any) any {
	switch x := v.(type) {
	case string:
		return stream.CleanText(x)
	case []any:
		for i := range x {
			x[i] = scrub(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[stream.CleanText(k)] = scrub(e)
		}
		return out
	default:
		return v
	}
}

// HashKeyPrefix starts the Reject.Key of a record that had no usable key:
// the prefix and a hash of its payload.
const HashKeyPrefix = "sha256:"

// payloadKey is the rejected-record key of a payload without a usable key.
func payloadKey(payload []byte) string {
	sum := sha256.Sum256(payload)
	return HashKeyPrefix + hex.EncodeToString(sum[:16])
}

// NewReject builds the Reject of a record of rejectStream that cannot be
// loaded: raw is the record as received (stored as CleanJSON makes it) and
// an empty key is replaced by a hash of it.
func NewReject(rejectStream, key string, raw json.RawMessage, err error) Reject {
	payload := CleanJSON(raw)
	if key == "" {
		key = payloadKey(payload)
	}
	return Reject{Stream: rejectStream, Key: stream.CleanText(key), Payload: payload, Error: stream.CleanText(err.Error())}
}

// RecordErrors turns records that extract could not decode into Rejects of
// rejectStream (for example stream.RejectCommunications).
func RecordErrors(rejectStream string, errs []extract.RecordError) []Reject {
	out := make([]Reject, 0, len(errs))
	for _, e := range errs {
		key := e.Key
		if strings.HasPrefix(key, "#") { // a position on the page, not a key
			key = ""
		}
		err := e.Err
		if err == nil {
			err = errors.New("undecodable record")
		}
		out = append(out, NewReject(rejectStream, key, e.Raw,
			fmt.Errorf("decode %s page %d: %w", e.Endpoint, e.Page, err)))
	}
	return out
}
