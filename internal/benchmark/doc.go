// Package benchmark is agencysync's reproducible performance harness,
// driven by cmd/agencybench and `make bench` / `make bench-quick`.
//
// It builds (or takes) the real agencysync and agencysandbox binaries, runs
// them against PostgreSQL (DATABASE_URL, or a private cluster started with
// warehouse.StartLocal) and measures, each of 1 to 7 as the median of at least three
// runs, with every ratio taken pair by pair within a run:
//
//  1. request efficiency: the requests of a full first backfill ÷ the
//     minimum possible (oracle.MinimumRequests);
//  2. pace: wall time ÷ (requests ÷ 10/s) against a sandbox enforcing
//     10 requests/s with 50 ms latency, and the 429s it answered;
//  3. pipeline: e-mails/s of `agencysync run --streams communications`,
//     over the sync's own time and over the whole process (start,
//     migration, fetch, decode, load), each against raw COPY of the same
//     rows (package oracle's, from the ground truth) into unlogged,
//     index-free tables;
//  4. steady state: the requests of a nightly run after a day of changes,
//     as a share of the daily quota and against a full refresh;
//  5. no-op re-run: rows written, WAL bytes and requests;
//  6. memory: the worker's peak RSS for two backfill sizes;
//  7. the decode and load micro-benchmarks of packages extract and load;
//  8. the large agency, each scenario once: its first sync's
//     requests ÷ the minimum, the nightly run after a day of changes as a
//     share of the quota, simulated days of nightly and hourly runs (the
//     highest day ÷ the average, the hourly runs' requests; days are the
//     service's, from the worker's quota ledger checked against the
//     sandbox), detail and communications rates at a raised rate limit, and
//     a first sync spanning several quota days, compared with the truth.
//  9. storage, each setting once: the bytes a first sync leaves
//     per e-mail, raw compressed with pglz and with lz4, e-mails without
//     and with bodies, beside a page-grouped alternative.
//  10. fleet, as 1 to 7: agencies synced per hour per worker by
//     a fleet of 1 and of 3 `agencysync fleet serve` workers, first syncs
//     of the same agencies, each its own sandbox at the real limits.
//
// Every scenario run uses a fresh warehouse schema, dropped afterwards. The
// result is one Markdown table (Table), printed and written with the
// machine's description (Machine) to BENCHMARKS.md.
//
// The pure parts — medians, ratios, number
// formatting, table rendering and the parsing of `go test -bench` output —
// have unit tests; nothing in the tests depends on wall-clock speed.
package benchmark
