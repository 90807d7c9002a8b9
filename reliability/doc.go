// Package reliability is agencysync's end-to-end reliability suite.
// It holds tests only: each scenario runs the real agencysync binary against
// the real agencysandbox binary and PostgreSQL, then compares the warehouse
// with the sandbox's ground truth table by table — row counts and a content
// checksum computed in SQL over both the warehouse and the rows package
// oracle builds from the truth. The oracle shares no code with the worker's
// decoders and transforms (TestOracleSharesNothingWithTheWorker), so a
// transform bug cannot appear on both sides; TestOracleCatchesPlantedTransformBugs
// is its control.
//
// The scenarios, one test each:
//
//	TestS01CrashResume       SIGKILLs at random moments of a backfill, then resume
//	TestS02Faults            500, HTML 502, truncated, slow, spurious 429, dropped
//	TestS03Quota             the budget stops the run before the service's quota; the next day completes
//	TestS04Rate              the default 10/s pace over a whole backfill: no "Rate limit exceeded"
//	TestS05BadRecords        malformed records land in rejected_records; all others load
//	TestS06Changes           new, edited, deleted and restored records
//	TestS07Concurrency       two workers at once: one runs, one skips
//	TestS08Credentials       revoked keys exit 3 after one request per interface; a foreign key gets 403 per stream
//	TestS09DatabaseTrouble   backends terminated mid-run; the server restarted mid-run
//	TestS10Secrets           no key in any output or sync_runs row of any scenario
//	TestS11BadConfiguration  each malformed variable exits 2 naming it
//	TestS12StopInFlight      SIGTERM at random moments of a backfill, then resume
//	TestS13…TestS19          servers that follow the spec but for one twist (twists_helpers_test.go):
//	                         future dates, deep nesting, records moving between pages, an echoed key,
//	                         lying list paging, missing paging fields, a line break in a key
//	TestS20VerifyGaps        verify finds and fills one-day gaps in two years of history
//	TestS21DatabaseCrash     the database shut down immediately mid-backfill
//	TestS22Fleet             3 fleet workers, 12 agencies: SIGKILL, stop and restart, quota day, refused key, appended agency
//
// TestChecksumDetectsTampering tests the comparison itself: rows lost,
// altered or added behind the worker's back are found, table by table.
//
// TestMain builds both binaries once and runs the tests under
// warehousetest.Main (DATABASE_URL, or a private PostgreSQL cluster). The
// scenarios run in parallel and mostly wait (on pacing, latency, backoff), so
// unless -test.parallel is given the suite raises it to 12: TestS10Secrets
// waits for every other scenario and must not keep them from running.
//
// Environment:
//
//	AGENCYSYNC_SOAK=1        larger sizes (make test-soak): 200 000 e-mails, more kills, longer faults
//	AGENCYSYNC_RESULTS=path  write the Markdown results table there (make reliability-report)
//	AGENCYSYNC_SEED=n        seed of the random kill moments (default: from the clock; always logged)
package reliability
