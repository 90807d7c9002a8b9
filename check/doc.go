// Package check is agencysync's connection and contract test of the Agency
// Data Service (`agencysync check`): the first command a new user runs
// against the real service, before any sync.
//
// It sends at most two requests per request kind, counted in the quota
// ledger like any request (the extract.Client it is given counts them): a
// page of one row of every list (brands, projects, budgets, invoices,
// collections, payments, profitability of both levels, the agency summary)
// under the list's paging in force, the detail of the first brand and of
// the first project, the first brand's contacts and one page of one e-mail
// from a recent date window (a second, wider window when the recent one is
// empty). It never sends a request past the day's budget it is given.
//
// Each list's paging is then tested (Endpoint.Paging), at most
// PagingRequests requests for its own paging (the page of one row
// included): the second row's position must answer a row of its own, and
// a page of the largest size configured must not come back shorter than
// the list without saying so (a silent cap, found with one row further
// when the list announces no total). When the list does not page as
// configured — more rows than asked for, a second position that repeats
// the first, paging fields that disagree with the rows — the other styles
// are probed, at most PerStyle requests each (offset first, or cursor when
// the answer named a next page; under the size parameter the page of one
// row showed the server reads, else under limit and per_page in turn), and the report names the paging the
// server honours, the largest page size when it showed, and the exact
// setting (Paging.Setting; Report.PagingSetting for every list at once).
// A list that does not page as configured makes the check's outcome
// "paging" (exit 1).
//
// For each endpoint it reports the HTTP status (a refused key stops the
// interface's other requests: they would be refused alike), the envelope
// the answer came in (extract.Envelope*: canonical or which tolerated
// variant), the paging fields, and for the record received: each mapped
// column of the stream declarations in force (stream.Apply under
// AGENCY_FIELD_MAP) and whether its source field was present and parsed
// (stream.Column.Coerce), and each unmapped field with its JSON type. A
// field present as null (or false) is present: nullable is not missing.
// A missing field names the unmapped fields that look like its replacement
// (inventory.Candidates: a compatible JSON type and a similar name). Values
// are never reported, only names and JSON types.
//
// # JSON shape (agencysync check --json)
//
// The Report is stable: its members are
//
//	outcome        ok | mismatch | paging | failed | unauthorized | budget
//	requests       requests sent (each counted in the ledger)
//	budget         requests the day allowed the check (-1: unlimited)
//	paging_setting the AGENCY_PAGING value that makes the lists page as the
//	               server does (absent when they do)
//	endpoints[]    one per request kind:
//	  stream, endpoint, request   ("page 1, per_page 1", "offset 0, limit 1", "id 17", "level=brand, page 1, per_page 1")
//	  outcome      ok | mismatch | paging | failed | unauthorized | forbidden | skipped
//	  status       HTTP status of the last answer (0: none)
//	  requests     requests sent for it
//	  error        what went wrong (never a key or a value)
//	  envelope     extract.Envelope* ("canonical", "php-paginator", ...)
//	  paging_fields  total, per_page, current_page, last_page as answered
//	  records      records on the page
//	  columns[]    column ("table.column"), field (source path), type,
//	               state (present | null | missing | unparsed | from_key |
//	               from_param | from_hook | not_seen), json_type,
//	               candidates[] (for missing), problem (for unparsed)
//	  unmapped[]   path, json_types[]
//	  problems[]   what else would reject the record
//	  note         e.g. no record to inspect (an empty list)
//	  paging       (lists) configured, honoured, found, max, setting,
//	               requests (beyond the page of one row), note
//
// States: present (a value that parses), null (the field is there, null or
// false: a missing value, fine), from_key / from_param / from_hook (absent
// but filled from the key the record was listed under, the request's
// parameter, or the declaration's hook), not_seen (nothing to judge in this
// record: a child collection without an element, or a column the
// declarations mark Sparse whose field is absent — NULL by nature in most
// records; its look-alikes are still listed), and the two failures: missing
// (absent) and unparsed (a value of the wrong kind).
//
// The package sends requests through extract and reads declarations from
// stream; it holds no SQL.
package check
