package benchmark

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// storageMethods are the TOAST compression methods figure 9 compares: the
// server's default and the one migration 00016 sets where the server has it.
var storageMethods = []string{"pglz", "lz4"}

// groupedPage is how many e-mails' raw records the page-grouped alternative
// stores in one jsonb array (one API page).
const groupedPage = 1000

// storageRun is what one first sync left in the warehouse.
type storageRun struct {
	emails    int64
	warehouse int64 // every table of the schema with its indexes and TOAST
	tables    []tableStorage
	took      time.Duration // the sync's own time
	// grouped is the page-grouped alternative's bytes by method (measured
	// in one run of each body setting only).
	grouped map[string]int64
}

// tableStorage is one table holding records as received: its bytes with
// indexes and TOAST, and its raw and detail_raw values as stored
// (pg_column_size), as text, and how many each method compressed.
type tableStorage struct {
	name                string
	total, raw, rawText int64
	values, pglz, lz4   int64
}

// storage runs figure 9: the bytes a first sync of the default
// agency with StorageEmails e-mails leaves in the warehouse, raw and
// detail_raw compressed with pglz and with lz4, e-mails without and with
// bodies, and what a store of one jsonb array per page of e-mails would take
// (an alternative, not what the warehouse does: its contract keeps each
// record in its row's raw).
func (h *harness) storage(ctx context.Context) []Row {
	agency := h.sizes.agency(h.sizes.StorageEmails)
	figures := []string{
		fmt.Sprintf("Storage: bytes per e-mail, raw compressed (first sync of %s, e-mails without body)", describe(agency)),
		"Storage: bytes per e-mail, raw compressed (the same with bodies, AGENCY_COMMS_WITH_MESSAGE=1)",
	}
	failAll := func(err error) []Row {
		rows := make([]Row, len(figures))
		for i, f := range figures {
			rows[i] = fail("9", f, err)
		}
		return rows
	}
	var lz4 bool
	if err := h.pool.QueryRow(ctx, "SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'").Scan(&lz4); err != nil {
		return failAll(fmt.Errorf("read compression methods: %w", err))
	}
	if !lz4 {
		return failAll(errors.New("the server was built without lz4"))
	}
	sb, err := startSandbox(ctx, h.sandboxBin, agency)
	if err != nil {
		return failAll(err)
	}
	defer sb.Stop()
	var rows []Row
	for i, bodies := range []bool{false, true} {
		runs := map[string]storageRun{}
		for _, method := range storageMethods {
			r, err := h.storageOnce(ctx, sb, bodies, method, method == storageMethods[len(storageMethods)-1])
			if err != nil {
				rows = append(rows, fail("9", figures[i], err))
				break
			}
			runs[method] = r
			h.log("storage, bodies %v, %s: %s e-mails, warehouse %s, raw %s stored (%s as text), sync %s", bodies, method,
				Int(r.emails), Bytes(float64(r.warehouse)), Bytes(float64(sumTables(r.tables, rawOf))), Bytes(float64(sumTables(r.tables, rawTextOf))),
				r.took.Round(time.Millisecond))
		}
		if len(runs) == len(storageMethods) {
			rows = append(rows, storageRow(figures[i], runs["pglz"], runs["lz4"]))
		}
	}
	return rows
}

// storageOnce runs one first sync on a fresh schema whose raw columns use
// method, and measures the schema; grouped also measures the page-grouped
// alternative.
func (h *harness) storageOnce(ctx context.Context, sb *Sandbox, bodies bool, method string, grouped bool) (storageRun, error) {
	var r storageRun
	schema := newSchema()
	defer h.dropSchema(schema)
	env := sb.WorkerEnv(h.dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "1000"
	env["AGENCY_COMMS_WITH_MESSAGE"] = "0"
	if bodies {
		env["AGENCY_COMMS_WITH_MESSAGE"] = "1"
	}
	if _, err := h.runSucceeded(ctx, "storage-migrate", "migrate up", env, "migrate", "up"); err != nil {
		return r, err
	}
	cols, err := h.recordColumns(ctx, schema)
	if err != nil {
		return r, err
	}
	for _, c := range cols {
		if _, err := h.pool.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET COMPRESSION %s",
			pgx.Identifier{schema, c[0]}.Sanitize(), pgx.Identifier{c[1]}.Sanitize(), method)); err != nil {
			return r, fmt.Errorf("set compression of %s.%s: %w", c[0], c[1], err)
		}
	}
	res, err := h.runSucceeded(ctx, "storage-"+method, "first sync", env, "run", "--no-migrate")
	if err != nil {
		return r, err
	}
	r.took = syncTook(res)
	if r, err = h.measureStorage(ctx, schema, cols, r); err != nil {
		return r, err
	}
	if grouped {
		r.grouped = map[string]int64{}
		for _, m := range storageMethods {
			if r.grouped[m], err = h.groupedBytes(ctx, schema, m); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

// recordColumns lists the (table, column) pairs of schema that hold records
// as received: raw and detail_raw.
func (h *harness) recordColumns(ctx context.Context, schema string) ([][2]string, error) {
	rows, err := h.pool.Query(ctx, `SELECT c.relname::text, a.attname::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r' AND a.attname IN ('raw', 'detail_raw') AND NOT a.attisdropped
ORDER BY 1, 2`, schema)
	if err != nil {
		return nil, fmt.Errorf("list raw columns: %w", err)
	}
	cols, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
		var c [2]string
		return c, row.Scan(&c[0], &c[1])
	})
	if err != nil {
		return nil, fmt.Errorf("list raw columns: %w", err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("list raw columns: none in schema %s", schema)
	}
	return cols, nil
}

// measureStorage vacuums the schema's tables (so that every run is measured
// in the same state, whatever autovacuum did) and reads their sizes and their
// raw columns' values into r.
func (h *harness) measureStorage(ctx context.Context, schema string, cols [][2]string, r storageRun) (storageRun, error) {
	rows, err := h.pool.Query(ctx, "SELECT c.relname::text FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r'", schema)
	if err != nil {
		return r, fmt.Errorf("list tables: %w", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return r, fmt.Errorf("list tables: %w", err)
	}
	for _, t := range tables {
		if _, err := h.pool.Exec(ctx, "VACUUM "+pgx.Identifier{schema, t}.Sanitize()); err != nil {
			return r, fmt.Errorf("vacuum %s: %w", t, err)
		}
	}
	if err := h.pool.QueryRow(ctx, `SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class c
WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r'`, schema).Scan(&r.warehouse); err != nil {
		return r, fmt.Errorf("measure warehouse: %w", err)
	}
	if err := h.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "emails"}.Sanitize()).Scan(&r.emails); err != nil {
		return r, fmt.Errorf("count e-mails: %w", err)
	}
	for _, c := range cols {
		if len(r.tables) == 0 || r.tables[len(r.tables)-1].name != c[0] {
			t := tableStorage{name: c[0]}
			if err := h.pool.QueryRow(ctx, "SELECT pg_total_relation_size($1::regclass)", pgx.Identifier{schema, c[0]}.Sanitize()).Scan(&t.total); err != nil {
				return r, fmt.Errorf("measure %s: %w", c[0], err)
			}
			r.tables = append(r.tables, t)
		}
		t := &r.tables[len(r.tables)-1]
		col := pgx.Identifier{c[1]}.Sanitize()
		var raw, text, values, pglz, lz4 int64
		err := h.pool.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(sum(pg_column_size(%[1]s)), 0)::bigint, coalesce(sum(octet_length(%[1]s::text)), 0)::bigint,
       count(%[1]s), count(*) FILTER (WHERE pg_column_compression(%[1]s) = 'pglz'), count(*) FILTER (WHERE pg_column_compression(%[1]s) = 'lz4')
FROM %[2]s`, col, pgx.Identifier{schema, c[0]}.Sanitize())).Scan(&raw, &text, &values, &pglz, &lz4)
		if err != nil {
			return r, fmt.Errorf("measure %s.%s: %w", c[0], c[1], err)
		}
		t.raw, t.rawText, t.values, t.pglz, t.lz4 = t.raw+raw, t.rawText+text, t.values+values, t.pglz+pglz, t.lz4+lz4
	}
	return r, nil
}

// groupedBytes is what the e-mails' raw records take stored groupedPage to
// a row as one jsonb array compressed with method: a scratch table in the
// run's schema, dropped with it.
func (h *harness) groupedBytes(ctx context.Context, schema, method string) (int64, error) {
	table := pgx.Identifier{schema, "grouped_raw_" + method}.Sanitize()
	if _, err := h.pool.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (page jsonb COMPRESSION %s)", table, method)); err != nil {
		return 0, fmt.Errorf("create grouped table: %w", err)
	}
	if _, err := h.pool.Exec(ctx, fmt.Sprintf(`INSERT INTO %s SELECT jsonb_agg(raw ORDER BY record_id)
FROM (SELECT raw, record_id, (row_number() OVER (ORDER BY record_id) - 1) / %d AS page FROM %s) e GROUP BY page`,
		table, groupedPage, pgx.Identifier{schema, "emails"}.Sanitize())); err != nil {
		return 0, fmt.Errorf("fill grouped table: %w", err)
	}
	if _, err := h.pool.Exec(ctx, "VACUUM "+table); err != nil {
		return 0, fmt.Errorf("vacuum grouped table: %w", err)
	}
	var n int64
	if err := h.pool.QueryRow(ctx, "SELECT pg_total_relation_size($1::regclass)", table).Scan(&n); err != nil {
		return 0, fmt.Errorf("measure grouped table: %w", err)
	}
	return n, nil
}

func rawOf(t tableStorage) int64     { return t.raw }
func rawTextOf(t tableStorage) int64 { return t.rawText }

// sumTables adds f over tables.
func sumTables(tables []tableStorage, f func(tableStorage) int64) int64 {
	var n int64
	for _, t := range tables {
		n += f(t)
	}
	return n
}

// storageRow renders figure 9's row of one body setting from its pglz and
// lz4 runs (the lz4 run carries the page-grouped alternative).
func storageRow(figure string, pglz, lz4 storageRun) Row {
	per := func(n, emails int64) string { return Int(int64(float64(n)/float64(max(emails, 1)) + 0.5)) }
	rawP, rawL := sumTables(pglz.tables, rawOf), sumTables(lz4.tables, rawOf)
	text := sumTables(pglz.tables, rawTextOf)
	var tables []string
	for i, p := range pglz.tables {
		if i >= len(lz4.tables) || lz4.tables[i].name != p.name {
			continue
		}
		l := lz4.tables[i]
		tables = append(tables, fmt.Sprintf("%s %s → %s (raw %s → %s, as text %s; values compressed: pglz run %s of %s, lz4 run %s lz4 + %s pglz)",
			p.name, Bytes(float64(p.total)), Bytes(float64(l.total)), Bytes(float64(p.raw)), Bytes(float64(l.raw)), Bytes(float64(p.rawText)),
			Int(p.pglz), Int(p.values), Int(l.lz4), Int(l.pglz)))
	}
	emailsP, emailsL := tableNamed(pglz.tables, "emails"), tableNamed(lz4.tables, "emails")
	detail := []string{
		fmt.Sprintf("one first sync per method on a fresh schema, same sandbox, %s e-mails; bytes per e-mail pglz → lz4: warehouse (every table with indexes and TOAST, after VACUUM) %s → %s, of which raw and detail_raw %s → %s (%s %% → %s %%; as text %s); emails table %s → %s, its raw %s → %s (as text %s)",
			Int(lz4.emails), per(pglz.warehouse, pglz.emails), per(lz4.warehouse, lz4.emails), per(rawP, pglz.emails), per(rawL, lz4.emails),
			Float(100*Ratio(float64(rawP), float64(pglz.warehouse)), 0), Float(100*Ratio(float64(rawL), float64(lz4.warehouse)), 0), per(text, pglz.emails),
			per(emailsP.total, pglz.emails), per(emailsL.total, lz4.emails), per(emailsP.raw, pglz.emails), per(emailsL.raw, lz4.emails), per(emailsP.rawText, pglz.emails)),
		"by table pglz → lz4: " + strings.Join(tables, "; "),
	}
	if lz4.grouped != nil {
		detail = append(detail, fmt.Sprintf("alternative, not implemented (the contract keeps each record in its row's raw): the e-mails' raw as one jsonb array per %s e-mails, per e-mail pglz %s, lz4 %s (vs %s and %s a row)",
			Int(groupedPage), per(lz4.grouped["pglz"], lz4.emails), per(lz4.grouped["lz4"], lz4.emails), per(emailsP.raw, pglz.emails), per(emailsL.raw, lz4.emails)))
	}
	detail = append(detail, fmt.Sprintf("sync time (one run each, not a timing figure) pglz %s s, lz4 %s s", Float(pglz.took.Seconds(), 1), Float(lz4.took.Seconds(), 1)))
	ratio := Ratio(float64(lz4.warehouse), float64(pglz.warehouse))
	return Row{ID: "9", Figure: figure,
		Result: fmt.Sprintf("lz4 %s vs pglz %s B (×%s); raw %s vs %s B (as text %s)", per(lz4.warehouse, lz4.emails), per(pglz.warehouse, pglz.emails),
			Float(ratio, 3), per(rawL, lz4.emails), per(rawP, pglz.emails), per(text, pglz.emails)),
		Verdict: Info,
		Detail:  strings.Join(detail, "; ")}
}

// tableNamed returns the table called name (zero when absent).
func tableNamed(tables []tableStorage, name string) tableStorage {
	for _, t := range tables {
		if t.name == name {
			return t
		}
	}
	return tableStorage{}
}
