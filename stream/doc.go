// Package stream declares each stream of a sync once: the endpoints it
// reads, what its checkpoint holds, how the planner estimates it, and the
// warehouse tables its records fill, with every column written once — its
// name, the source field path it is read from, its type, whether it is part
// of the key, and what load must know of it (sticky, fallback, parent, soft
// delete, the reject stream). One file per stream: brands.go, projects.go,
// finance.go, communications.go; a stream's hooks (what a declaration cannot
// say, such as the shapes of an e-mail's recipients) sit in its file. The
// column forms most tables repeat have a constructor each: field(name, type)
// for a column read from the field of its own name, recordID(name) for a
// list's key (the record's id), rawColumn() for the record as received; a
// column with any other rule spells it out as a Column.
//
// The package also says what a column's Type means when reading JSON
// (Column.Coerce: ids as strings or numbers, numbers as strings, exact
// decimals from a number's literal text, false and null for missing, [] for
// an empty object) and how a record's fields are reached (View: dotted paths,
// "<thing>_info" wrappers read through), so that every stage and every hook
// reads a field the same way.
//
// AGENCY_FIELD_MAP overrides exactly the declared column list: package config
// parses "projects.name=title,projects.status=state" (and the YAML file) into
// a FieldMap, Validate checks its columns against the declarations, and Apply
// returns the declarations with those columns reading the new paths.
//
// Each list endpoint declares how it pages (Endpoint.Pagination: the style —
// page, offset, cursor or none —, the parameter names and the largest page
// size; every list of the main interface pages by page/per_page up to 1000
// as the spec says, the communications endpoint's paging is fixed but for
// its page size). AGENCY_PAGING (and the field map file's paging:) override
// it: package config parses them, cli turns them into PagingOverrides, and
// ApplyPaging returns the declarations paging as they say; extract pages
// each list by the declaration it is given.
//
// # Import graph
//
// stream imports only the standard library and gjson. The stages import it,
// never the other way round:
//
//	cmd, cli ──► engine ──► extract ──► stream
//	                 │ ──► transform ──► stream
//	                 └───► load ──────► stream
//
// extract reads its page scan's numbers, escapes and integer keys by the
// same grammar as View (SkipNumber, SkipEscape, IsInteger) and names a
// value's JSON type as Coerce does (JSONType).
//
// transform turns records (stream.Record: a key and the raw JSON) into rows
// by the declarations; load derives its table specs (keys, SQL types,
// sticky, parents, soft delete, reject keys) from them; the engine runs each
// stream's endpoints and hands their records to both.
//
// # Adding a stream
//
// A new stream (say a tasks list) is at most six files:
//
//  1. stream/tasks.go: its Stream — endpoints, cursor, estimate, tables and
//     columns, hooks if any — added to the list in stream.go;
//  2. migrations/000NN_tasks.sql: the tables, with a COMMENT on each column;
//  3. the sandbox endpoint serving it (internal/testkit/sandbox);
//  4. extract/endpoints.go: the endpoint's path (AGENCY_PATHS) and list call;
//  5. engine/lists.go: the list in the sync (its records' Raw go to
//     transform.Records, its rows to load: neither needs a change);
//  6. a test: stream/tasks_test.go or an engine test syncing it end to end.
//
// transform, load (its table specs, merges, soft deletes, reject keys) and
// AGENCY_FIELD_MAP follow from the declaration.
package stream
