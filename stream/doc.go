// Package stream declares each stream of a sync once, and the engine runs
// it from the declaration alone: the endpoints it reads, each of a kind (a
// list, an entity's detail, a child list asked per entity, a date-windowed
// list), with its path and paging; the listings its list task runs (Lists:
// each an endpoint with its parameters, its sync_state partition, and
// whether it is read with updated_since between complete listings); the
// columns of a list entry that make an entity's detail and child lists due
// (Table.DetailFields); its main table (status); and the warehouse tables
// its records fill, with every column written once — its name, the source
// field path it is read from, its type, whether it is part of the key, and
// what load must know of it (sticky, fallback, parent, soft delete, the
// reject stream, which is the stream's name or starts with it). Stream,
// task, endpoint, AGENCY_PATHS, AGENCY_PAGING, reject-stream and inventory
// names all come from it. A stream whose behaviour a declaration cannot say
// names the engine's hooks that run it (Stream.Hooks: the communications
// stream's "mail"). One file per stream: brands.go, projects.go,
// finance.go, communications.go; a stream's own functions (what a column
// list cannot say, such as the shapes of an e-mail's recipients) sit in its
// file. The column forms most tables repeat have a constructor each:
// field(name, type) for a column read from the field of its own name,
// recordID(name) for a list's key (the record's id), rawColumn() for the
// record as received; a column with any other rule spells it out as a
// Column.
//
// Check runs on every declaration at start-up (and New on a declaration
// made elsewhere, a test's own stream): a declaration that lacks what the
// engine needs — a list no listing asks, a detail or child list without an
// entity list, an incremental listing without updated_at, a main table
// without soft deletes, a reject stream named after another stream —
// fails there, never by silently not running.
//
// The package also says what a column's Type means when reading JSON
// (Column.Coerce: ids as strings or numbers, numbers as strings, exact
// decimals from a number's literal text, false and null for missing, [] for
// an empty object — missing, or {} in a jsonb column that holds an object
// (Column.Object) —, dates as YYYY-MM-DD or as a timestamp at exactly
// midnight UTC, a date cast serialised as one) and how a record's fields are
// reached (View: dotted paths, "<thing>_info" wrappers read through), so that
// every stage and every hook reads a field the same way; the recipients of
// an e-mail are read by the communications stream's own hook (a list, also
// written as an object keyed "0".."n-1", or an object keyed by user id).
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
// transform turns records (stream.Record: a key and the raw JSON, and for
// an entity's detail the entity's stored list record, which the detail's
// own row reads the fields it leaves out from) into rows by the
// declarations; load derives its table specs (keys, SQL types,
// sticky, parents, soft delete, reject keys) from them; the engine runs each
// stream's endpoints and hands their records to both.
//
// # Adding a stream
//
// A new stream (say a tasks list) takes:
//
//  1. stream/tasks.go: its Stream — endpoints with their kinds and paths,
//     listings, main table, tables and columns, detail fields if its
//     entities have child lists, hooks if any — and its line in the list
//     in stream.go (a list asked per brand is an endpoint and a table
//     added to brands.go instead, and needs no line);
//  2. migrations/000NN_tasks.sql: the tables, with a COMMENT on each
//     column, and raw compressed with lz4 where the server has it, as
//     00016 does (load's lz4 test expects every declared record column so);
//  3. a test syncing it end to end, serving its records from the sandbox
//     by its declared paths (sandbox.Server.Declare);
//  4. its line in the docs' list of tables (docs/warehouse.md);
//  5. its tables in deploy/dbt/sources.yml, each described by its COMMENT
//     (deploy's TestDbtSources holds every table of the warehouse to it).
//
// The engine (its task, estimate, partitions, listing, details and child
// lists, status), extract (its paths, AGENCY_PATHS and AGENCY_PAGING),
// transform, load (its table specs, merges, soft deletes, reject keys) and
// AGENCY_FIELD_MAP follow from the declaration, and no test lists streams,
// tables or endpoints by hand. Once it is in All, every sync asks it, so
// the canonical sandbox serves it too: a list asked per brand that the
// spec lacks is served from its declaration (one or two records a brand,
// named by the endpoint's inventory name in the sandbox's stats and
// truth), and the oracle that counts a sync's requests without the
// worker's code (internal/testkit/oracle) counts it from that truth. A
// list of another kind (a top-level list, a list asked per project) still
// needs its generated data in internal/testkit/sandbox and its requests in
// the oracle.
//
// Measured, by a contributor following this recipe alone: adding a
// brand-level notes list (GET /v1/brands/{id}/notes, paged, soft-deleted
// per brand, asked only when the brand is due) took 5 files —
// stream/brands.go, migrations/000NN_brand_notes.sql,
// engine/brand_notes_test.go, docs/warehouse.md, deploy/dbt/sources.yml —
// with no existing test changed, and the whole suite (reliability
// included) green with it; its first run asked the notes once per brand
// (the oracle's count), its unchanged re-run sent 0 notes requests, and a
// note removed was soft-deleted. The oracle compares the values of the
// tables it lists (internal/testkit/oracle): a new table's rows are
// counted by its requests, not compared.
//
// The notebooks stream of engine/declared_test.go — a paged list, and a
// paged list per notebook soft-deleted per notebook — is declared, its
// tables created, its records served and synced end to end (a first run,
// an unchanged re-run that asks no notebook's notes, soft deletes) in that
// one test file, with no product file changed.
package stream
