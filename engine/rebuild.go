package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// TriggerRebuild is the trigger of `agencysync rebuild` (migration 00015).
const TriggerRebuild Trigger = "rebuild"

// DefaultRebuildBatch is how many stored records a rebuild re-derives per
// transaction.
const DefaultRebuildBatch = 1000

// ErrUnknownStream is wrapped by the error of a rebuild asked for a stream
// that does not exist.
var ErrUnknownStream = errors.New("unknown stream")

// ErrKeyChanged is wrapped by the error of a rebuild whose field map reads
// a stored record's key from another field: written, the record would land
// under a new key beside its old row. A full refresh re-keys a stream.
var ErrKeyChanged = errors.New("the field map changes a stored record's key")

// RebuildRequest is what one rebuild should do.
type RebuildRequest struct {
	// Streams selects the streams (default all).
	Streams []string
	// BatchSize is how many stored records each transaction re-derives
	// (default DefaultRebuildBatch).
	BatchSize int
}

// RebuildTable is what a rebuild did with the records of one table.
type RebuildTable struct {
	// Read counts the stored records re-derived.
	Read int64 `json:"read"`
	// Resumed says the rebuild continued where an interrupted one stopped.
	Resumed bool `json:"resumed"`
	// Rejected counts stored records the current mapping rejects: they are
	// recorded in rejected_records, their rows keep the values stored.
	Rejected int64 `json:"rejected"`
	// Retried counts the rejected records read again.
	Retried int64 `json:"retried"`
	// Recovered counts the rejected records that now fit: their rows landed
	// and they left rejected_records.
	Recovered int64 `json:"recovered"`
}

// RebuildResult is how a rebuild ended.
type RebuildResult struct {
	// RunID is the rebuild's sync_runs row.
	RunID string
	// Status is succeeded, partial (interrupted: the next rebuild
	// continues), failed, or skipped (another sync held the lock).
	Status Status
	// Counts are the rows written per table and the rejects recorded.
	Counts load.Counts
	// Tables says what was done per table of records.
	Tables map[string]*RebuildTable
	// Err is why the rebuild did not succeed.
	Err error
}

// rebuildStore is what a rebuild needs of *load.Store beyond warehouseStore.
type rebuildStore interface {
	StoredRecords(ctx context.Context, table string, after []string, limit int) ([]transform.Stored, error)
	RejectedRecords(ctx context.Context, table string, afterID int64, limit int) ([]load.RejectedRecord, error)
	KeysStored(ctx context.Context, table string, keys [][]any) ([]bool, error)
	CommitRebuild(ctx context.Context, runID string, p load.RebuildPage, resolved []int64) (load.Counts, int64, error)
	DeleteState(ctx context.Context, stream, partition string) error
}

// Rebuild re-derives the typed columns and child tables of the selected
// streams' stored records (raw and detail_raw) under the current stream
// declarations (Settings.Streams: the field map), without a request: table
// by table, in key order, BatchSize records per transaction, each committed
// with a cursor in sync_state (stream load.RebuildStream, partition the
// table) so that an interrupted rebuild continues where it stopped; a
// finished table's cursor is deleted. Rows are written by the sync's write
// path: unchanged rows are not rewritten and keep their _synced_at. Then
// the table's rejected records are retried: one that now fits, and whose
// key has no stored row, lands and leaves rejected_records; one that still
// does not fit stays as it is. Snapshot tables (brand_financial_snapshots)
// are left alone: a rebuild observes no day's figures. It holds the sync
// lock; when another sync holds it, it records a skipped run and returns
// StatusSkipped.
func (e *Engine) Rebuild(ctx context.Context, req RebuildRequest) (*RebuildResult, error) {
	rs, ok := e.store.(rebuildStore)
	if !ok {
		return nil, errors.New("rebuild: the warehouse store cannot read stored records")
	}
	streams, names := req.Streams, e.streamNames()
	if len(streams) == 0 {
		streams = names
	}
	for _, s := range streams {
		if !slices.Contains(names, s) {
			return nil, fmt.Errorf("rebuild: %w %q (want %s)", ErrUnknownStream, s, strings.Join(names, ","))
		}
	}
	batch := req.BatchSize
	if batch <= 0 {
		batch = DefaultRebuildBatch
	}
	lock, skipped, err := e.syncLock(ctx, "rebuild", load.Run{Trigger: string(TriggerRebuild), Streams: streams})
	if err != nil {
		return nil, err
	}
	if lock == nil {
		return &RebuildResult{RunID: skipped, Status: StatusSkipped}, nil
	}
	defer lock.Release()
	if err := e.store.CloseDeadRuns(ctx); err != nil {
		return nil, err
	}
	return e.rebuildLocked(ctx, rs, streams, nil, batch)
}

// rebuildLocked is a rebuild under the sync lock the caller holds, of the
// tables of streams (only those named in tables, when set), recorded in
// sync_runs with trigger rebuild.
func (e *Engine) rebuildLocked(ctx context.Context, rs rebuildStore, streams, tables []string, batch int) (*RebuildResult, error) {
	runID, err := e.store.StartRun(ctx, load.Run{Trigger: string(TriggerRebuild), Streams: streams})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rb := &rebuild{e: e, rs: rs, runID: runID, batch: batch, day: utcDate(e.set.Now()), only: tables,
		log: e.log.With(zap.String("run_id", runID)), res: &RebuildResult{RunID: runID, Tables: map[string]*RebuildTable{}},
		live: e.liveRun(runID, TriggerRebuild, streams, 0)}
	defer rb.live.end() // once the rebuild's end is recorded below
	rb.log.Info("rebuild started", zap.Strings("streams", streams), zap.Strings("tables", tables), zap.Int("batch", batch))
	err = rb.streams(ctx, streams)
	res := rb.res
	switch {
	case err == nil:
		res.Status = StatusSucceeded
	case ctx.Err() != nil:
		res.Status, res.Err = StatusPartial, fmt.Errorf("rebuild %w (the next rebuild continues): %w", ErrInterrupted, err)
	default:
		res.Status, res.Err = StatusFailed, err
	}
	errText := ""
	if res.Err != nil {
		errText = res.Err.Error()
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := e.store.FinishRun(fctx, runID, load.RunResult{Status: string(res.Status), RowsByTable: res.Counts.RowsByTable(),
		Rejected: res.Counts.Rejected, RejectsResolved: res.Counts.Resolved, Error: errText}); err != nil {
		return res, err
	}
	if e.metrics != nil {
		e.metrics.Runs.WithLabelValues(string(res.Status)).Inc()
	}
	fields := []zap.Field{zap.String("status", string(res.Status)), zap.Duration("took", time.Since(start).Round(time.Millisecond)),
		zap.Int("requests_used", 0), zap.Int64("rows_written", res.Counts.Written()), zap.Any("rows_by_table", res.Counts.RowsByTable()),
		zap.Int64("rejected", res.Counts.Rejected), zap.Any("tables", res.Tables)}
	if res.Err != nil {
		fields = append(fields, zap.String("error", res.Err.Error()))
	}
	rb.log.Info("rebuild summary", fields...)
	return res, nil
}

// rebuild is the state of one rebuild in progress.
type rebuild struct {
	e     *Engine
	rs    rebuildStore
	runID string
	only  []string // the tables to rebuild (nil: every table of the streams)
	live  *liveRun // the rebuild's live progress (nil: none kept)
	batch int
	day   time.Time
	log   *zap.Logger
	res   *RebuildResult
}

// rebuildCursor is a table's rebuild cursor in sync_state.
type rebuildCursor struct {
	// Mapping is the fingerprint of the declarations the rebuild started
	// under: a rebuild under another field map starts over.
	Mapping string `json:"mapping"`
	// After is the key (as text) of the last stored record re-derived.
	After []string `json:"after,omitempty"`
	// Rejects: the stored records are done; rejected records are retried.
	Rejects bool `json:"rejects,omitempty"`
	// AfterID is the last rejected record retried.
	AfterID int64 `json:"after_id,omitempty"`
}

func (rb *rebuild) streams(ctx context.Context, names []string) error {
	for _, name := range names {
		s := rb.e.declared(name)
		for _, t := range s.Tables() {
			if !rebuildable(t) || rb.only != nil && !slices.Contains(rb.only, t.Name) {
				continue
			}
			if err := rb.table(ctx, s, t); err != nil {
				return fmt.Errorf("rebuild %s: %w", t.Name, err)
			}
		}
	}
	return nil
}

// rebuildable: a table of whole records kept with their raw JSON.
func rebuildable(t *stream.Table) bool {
	return t.Parent == "" && t.Elements == nil && rawColumn(t) != ""
}

// rawColumn is the first column of t that holds the record as received (the
// list's, where a detail has its own).
func rawColumn(t *stream.Table) string {
	for _, c := range t.Columns {
		if c.Derived == stream.DerivedRecord {
			return c.Name
		}
	}
	return ""
}

// mappingOf fingerprints the source fields of s's columns.
func mappingOf(s *stream.Stream) string {
	h := sha256.New()
	for _, t := range s.Tables() {
		for _, c := range t.Columns {
			fmt.Fprintf(h, "%s.%s=%s|%s;", t.Name, c.Name, c.Field, strings.Join(c.Alternates, "|"))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func (rb *rebuild) table(ctx context.Context, s *stream.Stream, t *stream.Table) error {
	tally := &RebuildTable{}
	rb.res.Tables[t.Name] = tally
	cur := rebuildCursor{Mapping: mappingOf(s)}
	var kept rebuildCursor
	_, found, err := rb.e.readState(ctx, load.RebuildStream, t.Name, &kept)
	if err != nil {
		return err
	}
	switch {
	case !found:
	case kept.Mapping == cur.Mapping:
		cur, tally.Resumed = kept, true
		rb.log.Info("rebuild resumes where the last one stopped", zap.String("table", t.Name),
			zap.Strings("after", kept.After), zap.Bool("rejects", kept.Rejects), zap.Int64("after_id", kept.AfterID))
	case kept.Mapping != "":
		rb.log.Info("the field map changed since the interrupted rebuild; starting over", zap.String("table", t.Name))
	}
	if !cur.Rejects {
		stored := func() ([]transform.Stored, error) { return rb.rs.StoredRecords(ctx, t.Name, cur.After, rb.batch) }
		for recs, err := range batches(ctx, stored) {
			if err != nil {
				return err
			}
			b, err := transform.Rebuild(s, t.Name, recs, rb.day)
			if err != nil {
				return err
			}
			if err := sameKeys(t, recs, &b); err != nil {
				return err
			}
			dropSnapshots(&b)
			last := recs[len(recs)-1].Key
			cur.After = cur.After[:0]
			for _, k := range t.Key() {
				cur.After = append(cur.After, last[k.Name])
			}
			c, _, err := rb.commit(ctx, t, b, cur, nil, listHashes(s, t, recs))
			if err != nil {
				return err
			}
			tally.Read += int64(len(recs))
			tally.Rejected += c.Rejected
			if rb.e.live != nil { // batches of stored records, as pages
				rb.e.live.Update(rb.streamOf(t)+"."+t.Name, int((tally.Read+int64(rb.batch)-1)/int64(rb.batch)), 0)
			}
			rb.log.Info("rebuild progress", zap.String("table", t.Name), zap.Int64("read", tally.Read),
				zap.Int64("rows_written", c.Written()), zap.Int64("rejected", c.Rejected))
		}
		cur.Rejects = true
	}
	if t.Reject != "" {
		if err := rb.retryRejects(ctx, s, t, &cur, tally); err != nil {
			return err
		}
	}
	if err := rb.rs.DeleteState(ctx, load.RebuildStream, t.Name); err != nil {
		return err
	}
	return rb.e.store.SetTableMappings(ctx, []load.TableMapping{{Table: t.Name, Mapping: tableMapping(s, t), FieldMap: tableFieldMap(s, t)}})
}

// listHashes returns the list hashes of stored entities (the table of s's
// entity list) under the declarations of s, from their list records: what
// the next listing computes for them when nothing changed. nil for other
// tables.
func listHashes(s *stream.Stream, t *stream.Table, recs []transform.Stored) []load.ListedEntity {
	l, et, ok := s.Entities()
	if !ok || et.Name != t.Name {
		return nil
	}
	raw, key := rawColumn(t), t.Key()[0].Name
	listed := make([]stream.Record, 0, len(recs))
	for _, r := range recs {
		if rec := r.Raw[raw]; len(rec) > 0 && string(rec) != "null" {
			listed = append(listed, stream.Record{Key: r.Key[key], Raw: rec})
		}
	}
	b := transform.Records(transform.Input{Stream: s, Endpoint: l.Endpoint}, listed)
	hashes := transform.ListHashes(&b, t.Name)
	out := make([]load.ListedEntity, len(hashes))
	for i, h := range hashes {
		out[i] = load.ListedEntity{ID: h.ID, Hash: h.Hash}
	}
	return out
}

// retryRejects re-derives t's rejected records under the current
// declarations: those that now fit land, unless their key is stored (the
// stored row is the record as last landed), and leave rejected_records.
func (rb *rebuild) retryRejects(ctx context.Context, s *stream.Stream, t *stream.Table, cur *rebuildCursor, tally *RebuildTable) error {
	raw := rawColumn(t)
	nkey := len(t.Key())
	next := func() ([]load.RejectedRecord, error) {
		return rb.rs.RejectedRecords(ctx, t.Name, cur.AfterID, rb.batch)
	}
	for rejected, err := range batches(ctx, next) {
		if err != nil {
			return err
		}
		type fit struct {
			id int64
			b  transform.Batch
		}
		var fits []fit
		var keys [][]any
		for _, r := range rejected {
			b, err := transform.Rebuild(s, t.Name, []transform.Stored{{Key: r.KeyValues, Raw: map[string]json.RawMessage{raw: r.Payload}}}, rb.day)
			if err != nil {
				return err
			}
			if len(b.Rejects) > 0 || b.Len(t.Name) == 0 {
				continue // still does not fit: left as it is
			}
			dropSnapshots(&b)
			fits = append(fits, fit{id: r.ID, b: b})
			keys = append(keys, b.Rows(t.Name).Rows[0][:nkey])
		}
		stored, err := rb.rs.KeysStored(ctx, t.Name, keys)
		if err != nil {
			return err
		}
		var page transform.Batch
		var resolved []int64
		for i, f := range fits {
			if !stored[i] {
				page.Append(f.b)
				resolved = append(resolved, f.id)
			}
		}
		cur.AfterID = rejected[len(rejected)-1].ID
		_, recovered, err := rb.commit(ctx, t, page, *cur, resolved, nil)
		if err != nil {
			return err
		}
		tally.Retried += int64(len(rejected))
		tally.Recovered += recovered
		rb.log.Info("rebuild progress", zap.String("table", t.Name), zap.Int64("rejects_retried", tally.Retried),
			zap.Int64("rejects_recovered", tally.Recovered), zap.Int("rejects_key_stored", len(fits)-len(resolved)))
	}
	return nil
}

// streamOf is the stream whose declarations hold t (the detail_state
// stream of its entities).
func (rb *rebuild) streamOf(t *stream.Table) string {
	if _, s, ok := rb.e.tableOf(t.Name); ok {
		return s.Name
	}
	return ""
}

// batches yields the batches read gives, in turn, until it gives an empty
// one; it stops at the first error, which it yields, ctx's included.
func batches[T any](ctx context.Context, read func() ([]T, error)) iter.Seq2[[]T, error] {
	return func(yield func([]T, error) bool) {
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			b, err := read()
			if err != nil {
				yield(nil, err)
				return
			}
			if len(b) == 0 || !yield(b, nil) {
				return
			}
		}
	}
}

// commit writes a batch of t with its cursor (the rejected records it
// resolves, the list hashes it re-keys) in one transaction; a signal still
// lets the batch in hand commit.
func (rb *rebuild) commit(ctx context.Context, t *stream.Table, b transform.Batch, cur rebuildCursor, resolved []int64,
	rekeyed []load.ListedEntity) (load.Counts, int64, error) {
	cursor, err := json.Marshal(cur)
	if err != nil {
		return load.Counts{}, 0, fmt.Errorf("encode cursor: %w", err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	c, n, err := rb.rs.CommitRebuild(cctx, rb.runID, load.RebuildPage{Batch: b,
		State: &load.Checkpoint{Partition: t.Name, Cursor: cursor}, Rekeyed: rekeyed, RekeyStream: rb.streamOf(t)}, resolved)
	if err != nil {
		return c, n, err
	}
	rb.res.Counts.Add(c)
	stream := rb.streamOf(t)
	rb.live.committed(stream, int64(b.Records()), c.Written(), c.Rejected, 0)
	if m := rb.e.metrics; m != nil {
		for table, n := range c.RowsByTable() {
			m.RowsWritten.WithLabelValues(table).Add(float64(n))
		}
	}
	return c, n, nil
}

// sameKeys checks that the rows re-derived from stored records carry the
// keys they are stored under: none under a key that is not stored, and
// every stored key re-derived but for the records now rejected.
func sameKeys(t *stream.Table, recs []transform.Stored, b *transform.Batch) error {
	key := t.Key()
	stored := make(map[string]bool, len(recs))
	for _, r := range recs {
		parts := make([]string, len(key))
		for i, c := range key {
			parts[i] = r.Key[c.Name]
		}
		stored[strings.Join(parts, "/")] = false
	}
	if tr := b.Rows(t.Name); tr != nil {
		for _, row := range tr.Rows {
			parts := make([]string, len(key))
			for i := range key {
				switch v := row[i].(type) {
				case int64:
					parts[i] = strconv.FormatInt(v, 10)
				case time.Time:
					parts[i] = v.Format(time.DateOnly)
				default:
					parts[i] = fmt.Sprint(v)
				}
			}
			k := strings.Join(parts, "/")
			if _, ok := stored[k]; !ok {
				return fmt.Errorf("a stored record re-derives with the key %s: %w; use run --full-refresh", k, ErrKeyChanged)
			}
			stored[k] = true
		}
	}
	var lost []string
	for k, seen := range stored {
		if !seen {
			lost = append(lost, k)
		}
	}
	if len(lost) > len(b.Rejects) {
		slices.Sort(lost)
		return fmt.Errorf("the stored records %s re-derive with other keys: %w; use run --full-refresh", strings.Join(lost[:min(3, len(lost))], ", "), ErrKeyChanged)
	}
	return nil
}

// dropSnapshots removes the rows of snapshot tables from b: they record the
// figures seen on the day of a sync, which a rebuild does not observe.
func dropSnapshots(b *transform.Batch) {
	for name, tr := range b.Tables {
		if slices.ContainsFunc(tr.Table.Columns, func(c stream.Column) bool { return c.Derived == stream.DerivedSnapshotDay }) {
			delete(b.Tables, name)
		}
	}
}
