// Package inventory watches the shapes the Agency Data Service actually
// sends: which source fields each stream's records carry, in which JSON
// types and how often (the field inventory, table source_fields), and turns a
// run's inventory, its column coverage and its rejects into coverage
// warnings (sync_runs.warnings, the log, `status` and the metric
// agencysync_source_field_warnings).
//
// It is pure: no I/O, no SQL (package load stores and reads the inventory and
// the warnings).
//
// # Path syntax
//
// A field path names a field relative to the record (after its <thing>_info
// wrapper, if any, is removed):
//
//   - name — a top-level field;
//   - budget.amount, email.subject, financial_summary.invoiced — a field of a
//     nested object;
//   - team[].role — a field of the objects of an array; team[] itself stands
//     for the array's elements (metadata.tags[] has type string);
//   - users.to[].email — the same for an object keyed by identifiers (keys of
//     digits, or e-mail addresses): an id-keyed object is a collection, its
//     keys are not field names, so users.to[] covers the recipients whether
//     the service writes an array or an object keyed by user id.
//
// A path has at most MaxDepth names (collection steps [] do not count):
// top-level fields, one nested level, and the user objects of e-mails
// (users.from[].first_name). A deeper value is recorded with its type at the
// last level and not entered. The dotted part is the dotted path of
// stream.Column.Field; a child table's column is its table's array path, "[].",
// then the column's field (team[].role).
package inventory
