// Package load writes transformed rows into the PostgreSQL warehouse.
//
// One generic write path serves every table: per page, each table's rows are
// copied (COPY) into a temporary staging table and merged into the target
// with INSERT … ON CONFLICT … DO UPDATE, after an anti-join against the stored
// rows has removed the unchanged ones. An unchanged re-sync therefore locks and
// writes no row version and leaves _synced_at alone. When none of a page's
// keys is stored yet (backfill pages of ascending e-mail ids), the rows are
// copied straight into the table.
//
// A page commits in one transaction (Store.Commit): its rows, its rejected
// records and the stream's checkpoint in sync_state, and the soft deletes
// of a listing it completes. What a page carries is said by its kind: a
// listing's page (ListPage), a listing's end (ListEnd), an entity's detail
// with its child lists (DetailPage), a page of a range (RangePage). A crash leaves all of a page or nothing of it. The quota ledger
// (Ledger) is the exception on purpose: it counts each request durably before
// the request is sent.
//
// All SQL names its tables through pgx.Identifier with the warehouse schema,
// so several schemas can share one database and one pool.
package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/logging"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
)

// Config configures a Store.
type Config struct {
	// Schema is the warehouse schema (WAREHOUSE_SCHEMA). Required.
	Schema string
	// StatementTimeout bounds each statement of a page's transaction (SET
	// LOCAL statement_timeout); 0 keeps the session's setting.
	StatementTimeout time.Duration
	// SyncCommit makes each page commit with the server's synchronous_commit
	// (normally: wait for its WAL to reach disk). By default a page commits
	// with synchronous_commit off: still all or nothing, and a later
	// synchronous commit — the ledger's count of a request, or FinishRun —
	// flushes it; a crash in between loses only pages whose checkpoint it
	// loses too, so they are fetched again (see durability.go).
	SyncCommit bool
	// Logger receives warnings (a listing whose deletions were skipped); nil
	// logs nothing.
	Logger *zap.Logger
	// Redactor removes the keys from rejected records (key, payload and
	// reason: server text that may echo a key) before they are stored; nil
	// stores them as they are.
	Redactor *logging.Redactor
	// MassDeleteShare is the share of a table's live rows (0..1) a
	// complete listing may soft-delete at once; more wait for the next
	// listing to agree (see MarkDeleted). Nil: DefaultMassDeleteShare.
	MassDeleteShare *float64
	// Streams are the declarations whose tables the Store writes, in
	// order (nil: stream.All()); their tables must exist in the schema.
	Streams []*stream.Stream
}

// DefaultMassDeleteShare is the share of a table's live rows a listing may
// soft-delete at once unless Config says otherwise (SYNC_MASS_DELETE_SHARE).
const DefaultMassDeleteShare = 0.2

// Store writes pages into one warehouse schema and reads and writes its
// bookkeeping (sync_state, sync_runs). It is safe for concurrent use; each
// Commit uses its own connection.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	log    *zap.Logger
	red    *logging.Redactor
	tables []*table // in write order
	// details is the detail bookkeeping a page may carry.
	details *DetailState
	byName  map[string]*table

	rejectsSQL, stateSQL, getStateSQL, statesSQL, declareSQL string
	resolveLandedSQL, resolveUnlistedSQL                     string
	startRunSQL, finishRunSQL, skippedSQL, begin             string

	// analyzeMinRows: a table is analysed after pages wrote at least this
	// many rows to it and at least as many as it held when last analysed;
	// negative: never (see analyzeGrown).
	analyzeMinRows int64
	massShare      float64 // Config.MassDeleteShare
	growthMu       sync.Mutex
	growth         map[string]*tableGrowth
}

// tableGrowth is what this process wrote to a table since it last had
// statistics.
type tableGrowth struct {
	known    bool  // base has been read from pg_class
	base     int64 // rows when last analysed (0: never)
	written  int64 // rows written since
	analysis bool  // an ANALYZE is running
}

// New returns a Store for cfg.Schema on pool. The schema must be migrated.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, errors.New("create store: nil pool")
	}
	if cfg.Schema == "" {
		return nil, errors.New("create store: empty schema")
	}
	if cfg.StatementTimeout < 0 {
		return nil, fmt.Errorf("create store: negative statement timeout %s", cfg.StatementTimeout)
	}
	streams := cfg.Streams
	if streams == nil {
		streams = stream.All()
	}
	specs := specsOf(streams)
	s := &Store{pool: pool, schema: cfg.Schema, log: cfg.Logger, red: cfg.Redactor, byName: make(map[string]*table, len(specs)),
		analyzeMinRows: defaultAnalyzeMinRows, growth: make(map[string]*tableGrowth), massShare: DefaultMassDeleteShare}
	if m := cfg.MassDeleteShare; m != nil {
		if *m < 0 || *m > 1 {
			return nil, fmt.Errorf("create store: mass delete share %v outside 0..1", *m)
		}
		s.massShare = *m
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	for _, sp := range specs {
		t := bindTable(cfg.Schema, sp)
		s.tables = append(s.tables, t)
		s.byName[sp.name] = t
	}
	// A page's transaction starts with its settings in one round trip.
	// Custom plans: a generic plan cached while a table was small (a seq
	// scan) would stay in use after it has grown.
	s.begin = "BEGIN; SET LOCAL TimeZone = 'UTC'; SET LOCAL plan_cache_mode = force_custom_plan"
	if cfg.StatementTimeout > 0 {
		s.begin += fmt.Sprintf("; SET LOCAL statement_timeout = %d", cfg.StatementTimeout.Milliseconds())
	}
	if !cfg.SyncCommit {
		s.begin += "; SET LOCAL synchronous_commit = off"
	}
	s.buildBookkeepingSQL()
	s.buildRejectsSQL()
	ds, err := NewDetailState(cfg.Schema)
	if err != nil {
		return nil, fmt.Errorf("create store: %w", err)
	}
	s.details = ds
	return s, nil
}

// Schema returns the warehouse schema the Store writes.
func (s *Store) Schema() string { return s.schema }

// Tables returns the names of the model's tables, in write order.
func (s *Store) Tables() []string {
	out := make([]string, len(s.tables))
	for i, t := range s.tables {
		out[i] = t.name
	}
	return out
}

// page is what one transaction commits, as the commit kinds (commit.go)
// lower to it.
type page struct {
	// stream is the sync_state stream the page belongs to; required with a
	// state.
	stream string
	// runID is the sync_runs.run_id of the run writing the page ("" for
	// none): stored as last_run_id of the rejects and of the state.
	runID string
	// batch holds the rows of any tables, and the page's rejected records.
	batch transform.Batch
	// state, when set, is the stream's checkpoint committed with the rows.
	state *Checkpoint
	// sees, when set, is the listing the page belongs to: once the page is
	// committed, its rows (and keyed rejects) of the listing's table are
	// recorded as seen, and total as announced for it.
	sees  *Listing
	total int
	// ends are the listings the page ends: rows of their tables not seen
	// get _deleted_at, in the page's transaction.
	ends []*Listing
	// listed are the page's entities as listed: their list hashes are
	// recorded in detail_state under stream (see DetailState).
	listed []ListedEntity
	// unlisted, after the listings' deletions, marks the entities the
	// warehouse soft-deleted as no longer listed and soft-deletes their
	// child lists' rows (see DetailState).
	unlisted *Unlisted
	// detailTable is the table whose rows the page carries as an entity's
	// detail: they resolve the detail's rejects (DetailReject), not the
	// list's.
	detailTable string
	// fetched, when set, is the detail of an entity of stream the page
	// carries: detail_state records it.
	fetched *FetchedDetail
	// rekeyed, for a rebuild's page, are the list hashes of the entities of
	// rekeyStream it re-derived under a new field map: a detail current
	// under the old hash stays current.
	rekeyed     []ListedEntity
	rekeyStream string

	// then runs last inside the page's transaction (this package's tests:
	// failure injection, the settings and plans seen inside a page).
	then func(ctx context.Context, tx pgx.Tx) error
	// keepRejects: the page's rows resolve no rejected record (a rebuild's
	// pages re-derive stored records, no newer than a reject of their key).
	keepRejects bool
}

// FetchedDetail is the detail of one entity a page carries.
type FetchedDetail struct {
	// ID is the entity's id; Hash the hash of its list entry when it was due.
	ID, Hash string
	// At is when the detail was fetched (the engine's clock).
	At time.Time
}

// TableCounts says what a page did to one table.
type TableCounts struct {
	Inserted int64 `json:"inserted"`
	Updated  int64 `json:"updated"`
	// Deleted counts child rows removed because their parent's new version no
	// longer lists them, plus rows soft-deleted by a completed listing.
	Deleted int64 `json:"deleted"`
}

// Written is the number of rows the page wrote to the table.
func (c TableCounts) Written() int64 { return c.Inserted + c.Updated + c.Deleted }

// Counts says what one or more pages did.
type Counts struct {
	// Tables holds the counts of each table written to; tables left
	// untouched are absent.
	Tables map[string]TableCounts
	// Rejected is the number of rejected records stored.
	Rejected int64
	// Resolved is the number of earlier rejected records resolved: their
	// record landed, or a complete listing no longer served it (they left
	// rejected_records).
	Resolved int64
	// SkippedDeletions names listings whose deletions were not applied
	// because a rejected record of theirs had no key.
	SkippedDeletions []string
	// HeldDeletions are the listings whose unseen rows wait for the next
	// listing to agree (see MarkDeleted).
	HeldDeletions []HeldDeletion
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	for name, tc := range o.Tables {
		c.addTable(name, tc)
	}
	c.Rejected += o.Rejected
	c.Resolved += o.Resolved
	c.SkippedDeletions = append(c.SkippedDeletions, o.SkippedDeletions...)
	c.HeldDeletions = append(c.HeldDeletions, o.HeldDeletions...)
}

func (c *Counts) addTable(name string, tc TableCounts) {
	if tc.Written() == 0 {
		return
	}
	if c.Tables == nil {
		c.Tables = make(map[string]TableCounts)
	}
	cur := c.Tables[name]
	cur.Inserted += tc.Inserted
	cur.Updated += tc.Updated
	cur.Deleted += tc.Deleted
	c.Tables[name] = cur
}

// Written is the number of rows written to every table together.
func (c Counts) Written() int64 {
	var n int64
	for _, tc := range c.Tables {
		n += tc.Written()
	}
	return n
}

// RowsByTable returns the rows written per table, for sync_runs.rows_by_table.
func (c Counts) RowsByTable() map[string]int64 {
	out := make(map[string]int64, len(c.Tables))
	for name, tc := range c.Tables {
		out[name] = tc.Written()
	}
	return out
}

// Commit writes c in one transaction for run runID ("" for none): the
// rows of its batch table by table, its rejected records, the deletions of
// the listings it ends, its checkpoint, then the detail bookkeeping it
// carries. Either all of it commits or nothing does.
func (s *Store) Commit(ctx context.Context, runID string, c Commit) (Counts, error) {
	p := c.lower()
	p.runID = runID
	return s.commitPage(ctx, p)
}

// commitPage commits p in one transaction (see Commit).
func (s *Store) commitPage(ctx context.Context, p page) (Counts, error) {
	if p.state != nil && p.stream == "" {
		return Counts{}, errors.New("commit page: checkpoint without stream")
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return Counts{}, fmt.Errorf("commit page: acquire connection: %w", err)
	}
	defer conn.Release()
	stages := &stageSet{known: conn.Conn().PgConn().CustomData()}
	// A page that collides with a concurrent writer — a fast-path copy of a
	// row another transaction committed meanwhile, or a deadlock on rows both
	// update (users) — rolls back and is tried again, without fast path.
	fast := true
	for attempt := 1; ; attempt++ {
		var counts Counts
		err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{BeginQuery: s.begin}, func(tx pgx.Tx) error {
			var werr error
			counts, werr = s.commit(ctx, tx, &p, stages, fast)
			return werr
		})
		if err == nil {
			stages.committed()
			p.seen() // recorded once the page is durable
			s.analyzeGrown(ctx, conn, counts)
			return counts, nil
		}
		stages.rolledBack()
		var pgErr *pgconn.PgError
		if attempt < 3 && ctx.Err() == nil && errors.As(err, &pgErr) &&
			(pgErr.Code == codeUniqueViolation || pgErr.Code == codeDeadlockDetected) {
			s.log.Info("page collided with a concurrent writer; retrying",
				zap.String("stream", p.stream), zap.Int("attempt", attempt), zap.String("code", pgErr.Code))
			fast = false
			continue
		}
		return Counts{}, fmt.Errorf("commit page of %s: %w", p.stream, err)
	}
}

// seen records, once p committed, p's rows and keyed rejects as seen by its
// listing and by the listings it ended, and the total announced for its
// listing.
func (p *page) seen() {
	if p.sees != nil {
		p.sees.expect(p.total)
		p.sees.see(&p.batch)
	}
	for _, l := range p.ends {
		if l != p.sees {
			l.see(&p.batch)
		}
	}
}

// SQLSTATEs of a collision with a concurrent writer.
const (
	codeUniqueViolation  = "23505"
	codeDeadlockDetected = "40P01"
)

func (s *Store) commit(ctx context.Context, tx pgx.Tx, p *page, stages *stageSet, fast bool) (Counts, error) {
	var counts Counts
	for _, t := range s.tables {
		tc, err := t.write(ctx, tx, &p.batch, stages, fast)
		if err != nil {
			return counts, err
		}
		counts.addTable(t.name, tc)
	}
	if !p.keepRejects {
		n, err := s.resolveLanded(ctx, tx, &p.batch, p.detailTable)
		if err != nil {
			return counts, err
		}
		counts.Resolved += n
	}
	n, err := s.upsertRejects(ctx, tx, p.runID, p.batch.Rejects)
	if err != nil {
		return counts, err
	}
	counts.Rejected = n
	for _, l := range p.ends {
		if err := s.endListing(ctx, tx, p, l, &counts); err != nil {
			return counts, err
		}
	}
	if p.state != nil {
		st := *p.state
		if len(counts.HeldDeletions) > 0 {
			// A listing whose deletions wait for the next one to agree is
			// not complete: the next run lists again (and confirms them),
			// and its stream is not fresh meanwhile.
			st.Succeeded = false
		}
		if err := s.setState(ctx, tx, p.stream, p.runID, st, counts.Written(), counts.Rejected); err != nil {
			return counts, err
		}
	}
	if err := s.bookDetails(ctx, tx, p); err != nil {
		return counts, err
	}
	if p.then != nil {
		if err := p.then(ctx, tx); err != nil {
			return counts, err
		}
	}
	return counts, nil
}

// bookDetails records in detail_state, in p's transaction, what p carries
// of its stream's entities: as listed, no longer listed, re-keyed, their
// detail fetched.
func (s *Store) bookDetails(ctx context.Context, tx pgx.Tx, p *page) error {
	if err := s.details.recordListed(ctx, tx, p.stream, p.listed); err != nil {
		return err
	}
	if p.unlisted != nil {
		if err := s.details.markUnlisted(ctx, tx, p.stream, s.unlistedOf(p.unlisted)); err != nil {
			return err
		}
	}
	if err := s.details.rekey(ctx, tx, p.rekeyStream, p.rekeyed); err != nil {
		return err
	}
	if d := p.fetched; d != nil {
		return s.details.fetched(ctx, tx, p.stream, d.ID, d.Hash, d.At)
	}
	return nil
}

// endListing ends the complete listing pl in page p: the rows it did not
// see get _deleted_at, and the rejects of its stream it did not receive
// again are resolved (both after the page's own rows and rejects).
func (s *Store) endListing(ctx context.Context, tx pgx.Tx, p *page, pl *Listing, counts *Counts) error {
	l := pl.with(&p.batch)
	n, held, err := s.markDeleted(ctx, tx, l, p.runID)
	if held != nil {
		counts.HeldDeletions = append(counts.HeldDeletions, *held)
	}
	switch {
	case errors.Is(err, ErrShortListing):
		// Rows it did not see may exist: neither they nor their rejects are gone.
		counts.SkippedDeletions = append(counts.SkippedDeletions, l.String())
		s.log.Warn("listing deletions skipped: the listing saw fewer rows than announced",
			zap.String("schema", s.schema), zap.String("listing", l.String()))
		return nil
	case errors.Is(err, ErrIncompleteListing):
		counts.SkippedDeletions = append(counts.SkippedDeletions, l.String())
		s.log.Warn("listing deletions skipped: a rejected record had no key",
			zap.String("schema", s.schema), zap.String("listing", l.String()))
	case err != nil:
		return err
	default:
		counts.addTable(l.spec.name, TableCounts{Deleted: n})
	}
	if held != nil {
		// A mass delete waiting for confirmation: the listing may be wrong,
		// so the rejects it did not list stay open too.
		return nil
	}
	resolved, err := s.resolveUnlisted(ctx, tx, l)
	if err != nil {
		return err
	}
	counts.Resolved += resolved
	return nil
}

// upsertRejects stores rejected records: a record rejected again (same stream
// and key) has its occurrences counted up and its payload and error replaced.
func (s *Store) upsertRejects(ctx context.Context, tx pgx.Tx, runID string, rejects []transform.Reject) (int64, error) {
	if len(rejects) == 0 {
		return 0, nil
	}
	type key struct{ stream, key string }
	index := make(map[key]int, len(rejects))
	var streams, keys, payloads, errs []string
	var occurrences []int32
	for _, r := range rejects {
		if s.red != nil {
			// A payload the redaction leaves invalid JSON is stored by
			// CleanJSON as a JSON string.
			if raw := string(r.Payload); s.red.Contains(raw) {
				r.Payload = json.RawMessage(s.red.String(raw))
			}
			r.Key, r.Error = s.red.String(r.Key), s.red.String(r.Error)
		}
		k := key{r.Stream, r.Key}
		payload := string(transform.CleanJSON(r.Payload))
		if i, ok := index[k]; ok {
			payloads[i], errs[i] = payload, r.Error
			occurrences[i]++
			continue
		}
		index[k] = len(streams)
		streams, keys = append(streams, r.Stream), append(keys, r.Key)
		payloads, errs = append(payloads, payload), append(errs, r.Error)
		occurrences = append(occurrences, 1)
	}
	if _, err := tx.Exec(ctx, s.rejectsSQL, streams, keys, payloads, errs, occurrences, runID); err != nil {
		return 0, fmt.Errorf("store rejected records: %w", err)
	}
	return int64(len(rejects)), nil
}

// Checkpoint is the state of a stream (or one of its partitions) that a page
// commits together with its rows.
type Checkpoint struct {
	// Partition is the sync_state partition; "" for the whole stream.
	Partition string
	// Watermark is the new watermark; nil keeps the stored one.
	Watermark *time.Time
	// Cursor is the resume cursor (a JSON object); nil stores {} (nothing to
	// resume).
	Cursor json.RawMessage
	// Succeeded marks the stream (partition) as completed: last_success_at
	// becomes the transaction's time.
	Succeeded bool
}

// State is a row of sync_state.
type State struct {
	Stream        string
	Partition     string
	Watermark     *time.Time
	Cursor        json.RawMessage
	LastSuccessAt *time.Time
	LastRunID     string
	RowsTotal     int64
	RejectedTotal int64
	SyncedAt      time.Time
}

// ErrNoState is returned by GetState for a stream that has no state yet.
var ErrNoState = errors.New("no sync state")

// GetState returns the state of stream's partition ("" for the whole stream),
// or ErrNoState when there is none.
func (s *Store) GetState(ctx context.Context, stream, partition string) (State, error) {
	st, err := scanState(s.pool.QueryRow(ctx, s.getStateSQL, stream, partition))
	if errors.Is(err, pgx.ErrNoRows) {
		return State{}, fmt.Errorf("get state of %s/%s: %w", stream, partition, ErrNoState)
	}
	if err != nil {
		return State{}, fmt.Errorf("get state of %s/%s: %w", stream, partition, err)
	}
	return st, nil
}

// States returns the states of every partition of stream, by partition.
func (s *Store) States(ctx context.Context, stream string) ([]State, error) {
	rows, err := s.pool.Query(ctx, s.statesSQL, stream)
	if err != nil {
		return nil, fmt.Errorf("list states of %s: %w", stream, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (State, error) { return scanState(r) })
	if err != nil {
		return nil, fmt.Errorf("list states of %s: %w", stream, err)
	}
	return out, nil
}

func scanState(row pgx.Row) (State, error) {
	var st State
	var cursor []byte
	var runID *string
	err := row.Scan(&st.Stream, &st.Partition, &st.Watermark, &cursor, &st.LastSuccessAt, &runID,
		&st.RowsTotal, &st.RejectedTotal, &st.SyncedAt)
	st.Cursor = cursor
	if runID != nil {
		st.LastRunID = *runID
	}
	return st, err
}

// SetState writes the checkpoint of stream outside a page (for example to
// reset a cursor); pages carry theirs.
func (s *Store) SetState(ctx context.Context, stream, runID string, cp Checkpoint) error {
	if stream == "" {
		return errors.New("set state: empty stream")
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return s.setState(ctx, tx, stream, runID, cp, 0, 0)
	})
}

// setState upserts the checkpoint; the row is left alone when nothing in it
// would change.
func (s *Store) setState(ctx context.Context, tx pgx.Tx, stream, runID string, cp Checkpoint, written, rejected int64) error {
	var cursor any
	if len(cp.Cursor) > 0 {
		cursor = string(cp.Cursor)
	}
	if _, err := tx.Exec(ctx, s.stateSQL, stream, cp.Partition, cp.Watermark, cursor, cp.Succeeded, runID,
		written, rejected); err != nil {
		return fmt.Errorf("set state of %s/%s: %w", stream, cp.Partition, err)
	}
	return nil
}

// DeclarePartitions records the partitions of stream that make its
// freshness (its lists) with no state yet, so that a partition that never
// completed — its first listing failed — keeps the stream from being shown
// fresh (sync_freshness takes the oldest last success of the regular
// partitions there are). Partitions already recorded are left as they are.
func (s *Store) DeclarePartitions(ctx context.Context, stream string, partitions []string) error {
	if _, err := s.pool.Exec(ctx, s.declareSQL, stream, partitions); err != nil {
		return fmt.Errorf("declare partitions of %s: %w", stream, err)
	}
	return nil
}

func (s *Store) buildBookkeepingSQL() {
	id := func(name string) string { return pgx.Identifier{s.schema, name}.Sanitize() }
	s.rejectsSQL = fmt.Sprintf(`INSERT INTO %s AS r (stream, record_key, payload, error, occurrences, last_run_id)
SELECT u.stream, u.record_key, u.payload::jsonb, u.error, u.occurrences, NULLIF($6::text, '')::uuid
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::integer[]) AS u(stream, record_key, payload, error, occurrences)
ON CONFLICT (stream, record_key) DO UPDATE SET
	payload = EXCLUDED.payload, error = EXCLUDED.error,
	occurrences = r.occurrences + EXCLUDED.occurrences, last_seen_at = now(),
	last_run_id = coalesce(EXCLUDED.last_run_id, r.last_run_id), _synced_at = now()`, id("rejected_records"))

	s.stateSQL = fmt.Sprintf(`INSERT INTO %s AS st
	(stream, partition, watermark, cursor, last_success_at, last_run_id, rows_total, rejected_total)
VALUES ($1, $2, $3, coalesce($4::jsonb, '{}'), CASE WHEN $5::boolean THEN now() END, NULLIF($6::text, '')::uuid, $7, $8)
ON CONFLICT (stream, partition) DO UPDATE SET
	watermark = coalesce(EXCLUDED.watermark, st.watermark),
	cursor = EXCLUDED.cursor,
	last_success_at = coalesce(EXCLUDED.last_success_at, st.last_success_at),
	last_run_id = coalesce(EXCLUDED.last_run_id, st.last_run_id),
	rows_total = st.rows_total + EXCLUDED.rows_total,
	rejected_total = st.rejected_total + EXCLUDED.rejected_total,
	_synced_at = now()
WHERE EXCLUDED.rows_total <> 0 OR EXCLUDED.rejected_total <> 0 OR EXCLUDED.last_success_at IS NOT NULL
	OR (st.watermark, st.cursor, st.last_run_id) IS DISTINCT FROM
	   (coalesce(EXCLUDED.watermark, st.watermark), EXCLUDED.cursor, coalesce(EXCLUDED.last_run_id, st.last_run_id))`,
		id("sync_state"))

	s.declareSQL = fmt.Sprintf(`INSERT INTO %s (stream, partition) SELECT $1, p FROM unnest($2::text[]) AS p
ON CONFLICT (stream, partition) DO NOTHING`, id("sync_state"))

	cols := "stream, partition, watermark, cursor, last_success_at, last_run_id::text, rows_total, rejected_total, _synced_at"
	s.getStateSQL = fmt.Sprintf("SELECT %s FROM %s WHERE stream = $1 AND partition = $2", cols, id("sync_state"))
	s.statesSQL = fmt.Sprintf("SELECT %s FROM %s WHERE stream = $1 ORDER BY partition", cols, id("sync_state"))

	s.startRunSQL = fmt.Sprintf(`INSERT INTO %s (run_id, trigger, streams, requests_planned)
VALUES (coalesce(NULLIF($1::text, '')::uuid, gen_random_uuid()), $2, $3, $4) RETURNING run_id::text`, id("sync_runs"))
	s.finishRunSQL = fmt.Sprintf(`UPDATE %s SET finished_at = now(), status = $2, requests_used = $3, retries = $4,
	rows_by_table = $5, rejected = $6, error = NULLIF($7, ''), open_rejects = $8, rejects_resolved = $9, _synced_at = now()
WHERE run_id = $1::text::uuid`, id("sync_runs"))
	s.skippedSQL = fmt.Sprintf(`INSERT INTO %s (run_id, trigger, streams, status, finished_at, error)
VALUES (coalesce(NULLIF($1::text, '')::uuid, gen_random_uuid()), $2, $3, 'skipped', now(), NULLIF($4, ''))
RETURNING run_id::text`, id("sync_runs"))
}
