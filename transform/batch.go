// Package transform turns records as received — a key and the raw JSON,
// stream.Record — into rows of the warehouse tables (migrations/00002_model.sql),
// driven by the stream declarations of package stream: Records reads each
// declared column at its source path and coerces it to its type, runs the
// stream's hooks, and returns a Batch of rows per table. It is pure: no I/O,
// no database, no clock — the caller passes the snapshot day where one is
// needed.
//
// A record that violates the model (missing key or required value, a value
// of the wrong type, an over-long key, a participant with neither e-mail
// nor user id, …) becomes a Reject carrying the record as received and the
// reason; the other records of the page proceed. Rows are ready to store:
// text is stripped of NUL characters (which PostgreSQL cannot hold), raw
// JSON is valid UTF-8 JSON, instants are UTC with microsecond precision and
// dates are UTC midnights. Within one call, records with the same key
// collapse (the last one wins) and so do the users they mention.
package transform

import "encoding/json"

// Reject is a record that could not be loaded; it becomes a rejected_records row.
type Reject struct {
	// Stream is the stream and list the record came from, e.g. "communications"
	// or "finance.invoices" (the Stream* constants).
	Stream string
	// Key is the record's key when known, otherwise HashKeyPrefix and a
	// hash of Payload.
	Key string
	// Payload is the record as received: valid JSON (a JSON string when the
	// received bytes were not JSON).
	Payload json.RawMessage
	// Error says why the record was rejected.
	Error string
}
