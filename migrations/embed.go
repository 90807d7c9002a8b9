// Package migrations holds the warehouse's goose SQL migrations, embedded in the
// binary. Every statement is unqualified: the runner (package warehouse) sets
// search_path to the warehouse schema, so each schema migrates independently.
package migrations

import "embed"

// FS holds the *.sql migration files, named NNNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
