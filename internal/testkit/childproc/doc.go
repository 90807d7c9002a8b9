// Package childproc runs the project's two binaries as child processes, for
// the benchmark harness (cmd/agencybench) and the end-to-end reliability
// suite: agencysandbox, started with SandboxOptions, waited for until it
// listens, driven through its admin API and stopped (Sandbox); and
// agencysync, run with exactly the environment it is given, its output
// collected and its JSON log read for the "sync summary" line (Worker,
// Result).
//
// Nothing here depends on package testing: the reliability suite wraps these
// calls in test helpers that fail the test on an error.
package childproc
