// Command agencysync keeps a PostgreSQL warehouse in sync with the Agency Data
// Service. See `agencysync --help` and the README.
//
// # Packages
//
// Imports point down only (imports_test.go checks it); a package may import
// any package on a lower line:
//
//	cmd/agencysync
//	cli                      the commands: parses flags, wires the rest
//	fleet                    many agencies on many workers: River jobs, schedules, fleet status and view
//	serve  notify  report    cron + HTTP and status page · run messages · `status` tables
//	engine                   orchestrates a run: plan, lock, tasks, pages, run record
//	load       warehouse     all SQL (writes, state, runs, ledger, lock, status reads) · pool, schema, migrate
//	           check         · `agencysync check`: both interfaces against the stream declarations (no SQL)
//	transform                service records → warehouse rows
//	extract  metrics         the two HTTP interfaces, quota, pacing · the Prometheus series (coverage warnings' gauge from inventory)
//	stream   inventory       each stream declared once (endpoints, paging, cursor, tables, columns) · source fields seen, coverage warnings
//	config logging migrations progress spool
//
// migrations holds the goose files and the few statements about the schema
// itself (its creation, the applied versions, search_path); every other SQL
// text is in load (load/sqlowner_test.go checks it).
package main
