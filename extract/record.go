package extract

// ID is a source identifier normalised to text: the JSON string "42" and the
// JSON number 42 name the same record. The empty ID means absent.
type ID string
