// Package fleet runs many agencies on many machines: each fleet worker
// (agencysync fleet serve) takes agencies' syncs from one job queue that
// every worker shares in PostgreSQL — River (github.com/riverqueue/river),
// with its own tables in FLEET_SCHEMA — and runs each sync through the
// single-agency path (Agencies, implemented by cli: configuration,
// warehouse, engine, as `agencysync run` does).
//
// What carries which guarantee:
//
//   - One sync per agency at a time, anywhere: a sync is a River job whose
//     arguments are the agency's name alone, unique by those arguments while
//     it is pending, scheduled, available, running or retryable, so an
//     agency has at most one job waiting or running. The advisory sync lock
//     of the agency's warehouse schema (the engine's) stays the second
//     guard: a run that finds it held is recorded as skipped and the job
//     waits a minute (a manual `agencysync run`, or a job rescued while its
//     first worker was still finishing).
//   - Schedules: a River periodic job per agency from its SYNC_SCHEDULE (in
//     AGENCY_QUOTA_TZ, as serve reads it); River's leader election has one
//     worker insert them. A worker that learns of an agency (at start, or
//     when FLEET_FILE gains it) inserts a job at once when the agency is
//     overdue: never synced, or a scheduled moment has passed since its last
//     run.
//   - A worker that dies: River's rescuer makes a job running longer than
//     FLEET_RESCUE_AFTER available again; the next worker resumes the
//     agency from its checkpoint (the engine commits every page with its
//     cursor). A job never runs longer than FLEET_JOB_TIMEOUT: its sync
//     stops at the page in hand and the job is snoozed for no time, so it
//     resumes at once, after the agencies already waiting (fairness).
//   - Quota: a sync that ends because the key's daily budget is spent is
//     snoozed (River's JobSnooze, which costs no attempt) until the
//     service's next quota day on the service's clock, read again at least
//     every FLEET_QUOTA_RECHECK. A refused key (401) parks the job (snoozed
//     for good, so the periodic job's inserts are duplicates of it) until a
//     worker sees the agency's key files change; the one failed run is the
//     one notification. Other exit-75 outcomes are snoozes too: an
//     interrupted sync resumes at once, one that left a range incomplete at
//     the next scheduled moment.
//   - Bounded and fair: a worker runs at most FLEET_CONCURRENCY syncs (the
//     River queue's MaxWorkers), each paced by its own agency's limiter.
//
// The job's output (River's recorded output, in the job's metadata) keeps
// why it waits and, for a refused key, a digest of the key files' contents
// (keyStamp), never a key.
package fleet
