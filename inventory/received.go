package inventory

// Kinds of warnings about what a run received rather than what its records
// hold (the engine raises them; they are stored, logged and counted like the
// coverage warnings).
const (
	// KindInvalidUTF8: responses of a stream that declared no charset (or
	// one no registry knows) were not valid UTF-8; their invalid bytes were
	// stored as U+FFFD. Count is those responses, Records the stream's
	// successful responses, Candidates the common charsets that decode them
	// cleanly (most likely first) and Reason says what to ask of the
	// service.
	KindInvalidUTF8 Kind = "invalid_utf8"
	// KindDuplicateID: records of a stream had the same id as a later record
	// of the same page; the last one of each id was stored. Column is the
	// table (not a column: the duplicates are of its key), Count the records
	// dropped, Records the records of the table received.
	KindDuplicateID Kind = "duplicate_id"
)
