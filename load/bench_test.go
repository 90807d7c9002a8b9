package load

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/fixture"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/stream"
	"github.com/agencysync/agencysync/transform"
	"github.com/agencysync/agencysync/warehouse"
)

// benchEmails is how many e-mails the load benchmarks write per run:
// go test -bench . ./load/ -args -load.emails=200000, or LOAD_BENCH_EMAILS.
var benchEmails = flag.Int("load.emails", envInt("LOAD_BENCH_EMAILS", 20000), "e-mails loaded per benchmark run")

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

const benchPageSize = 1000

// commsGenerator produces deterministic pages shaped like the communications
// endpoint's: 300 platform users and 3000 outside correspondents; each e-mail
// has one sender, one or two to, sometimes a cc and rarely a bcc (about three
// participant rows per e-mail), and a raw record of about a kilobyte.
type commsGenerator struct {
	people []fixture.Participant
}

func newCommsGenerator() *commsGenerator {
	g := &commsGenerator{}
	first := []string{"Ana-Maria", "Ștefan", "Ioana", "Mihai", "Mădălina", "Radu", "Ilinca", "Țicu", "Bogdan", "Irina"}
	last := []string{"Popescu", "Ionescu", "Dumitrașcu", "Stan", "Georgescu", "Vasilescu", "Munteanu", "Rădulescu"}
	for i := range 3300 {
		f, l := first[i%len(first)], last[i%len(last)]
		p := fixture.Participant{FirstName: f, FullName: f + " " + l, Status: "Activ",
			Avatar: "https://platform.example/img/avatar-blank.png"}
		if i < 300 {
			id := int64(1000 + i)
			p.PlatformUserID = &id
			p.LastName = &l
			p.Email = fmt.Sprintf("%s.%s%d@agentie.ro", f, l, i)
			p.Phone = ptr("0722 " + strconv.Itoa(100000+i))
		} else {
			p.FullName = f + " " // external: null last_name, trailing space
			p.Email = fmt.Sprintf("contact%d@client%d.ro", i, i%97)
			p.Phone = ptr("")
		}
		g.people = append(g.people, p)
	}
	return g
}

// page returns page n (0-based) of e-mails, transformed.
func (g *commsGenerator) page(n int) transform.Batch {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	base := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]stream.Record, benchPageSize)
	pick := func() fixture.Participant { return g.people[rng.IntN(len(g.people))] }
	keyed := func(p fixture.Participant) fixture.Participant { return p } // platform users keep their id in to/cc/bcc
	unkeyed := func(p fixture.Participant) fixture.Participant { p.PlatformUserID = nil; return p }
	for i := range recs {
		id := int64(n*benchPageSize + i + 1)
		subject := fmt.Sprintf("Re: Campanie %d — ofertă revizuită", id%500)
		from := []fixture.Participant{unkeyed(pick())}
		to := []fixture.Participant{keyed(pick())}
		if rng.IntN(2) == 0 {
			to = append(to, keyed(pick()))
		}
		var cc, bcc []fixture.Participant
		if rng.IntN(2) == 0 {
			cc = append(cc, keyed(pick()))
		}
		if rng.IntN(10) == 0 {
			bcc = append(bcc, keyed(pick()))
		}
		at := base.Add(time.Duration(id) * 17 * time.Second).Add(time.Duration(rng.IntN(1e6)) * time.Microsecond)
		c := fixture.Communication{RecordID: id, Email: fixture.EmailFields{
			TypeID: ptr(int64(1)), TypeName: ptr("Email"), BrandID: extract.ID(strconv.Itoa(int(id%40) + 1)),
			Subject: &subject, HasAttachments: rng.IntN(5) == 0, Size: ptr(int64(2000 + rng.IntN(90000))),
			MailboxID: fmt.Sprintf("18c%013x", id), MailboxThread: fmt.Sprintf("18c%013x", id/3), EmailAt: at,
		}, Users: fixture.Participants{From: from, To: to, CC: cc, BCC: bcc}}
		if rng.IntN(3) == 0 {
			c.Email.ProjectID = extract.ID(strconv.Itoa(int(id%200) + 1))
		}
		recs[i] = stream.Record{Key: strconv.FormatInt(id, 10), Raw: rawCommunication(&c)}
	}
	comms, _ := stream.Lookup("communications")
	return transform.Records(transform.Input{Stream: comms, Endpoint: stream.EndpointCommunications}, recs)
}

// rawCommunication renders a record the way the endpoint sends it.
func rawCommunication(c *fixture.Communication) json.RawMessage {
	user := func(p fixture.Participant) map[string]any {
		return map[string]any{"first_name": p.FirstName, "last_name": p.LastName, "full_name": p.FullName,
			"email": p.Email, "phone": p.Phone, "avatar": p.Avatar, "status": p.Status}
	}
	keyed := func(ps []fixture.Participant) any {
		if len(ps) == 0 {
			return []any{}
		}
		m := map[string]any{}
		for _, p := range ps {
			k := p.Email // an outsider is keyed by address, as the sandbox does
			if p.PlatformUserID != nil {
				k = strconv.FormatInt(*p.PlatformUserID, 10)
			}
			m[k] = user(p)
		}
		return m
	}
	var from []any
	for _, p := range c.Users.From {
		from = append(from, user(p))
	}
	var attachments any
	if c.Email.HasAttachments {
		attachments = 1
	}
	raw, err := json.Marshal(map[string]any{
		"email": map[string]any{"type_id": c.Email.TypeID, "type_name": c.Email.TypeName, "brand_id": c.Email.BrandID,
			"project_id": c.Email.ProjectID, "subject": c.Email.Subject, "message": nil, "has_attachments": attachments,
			"size": c.Email.Size, "mailbox_id": c.Email.MailboxID, "mailbox_thread": c.Email.MailboxThread,
			"email_at": c.Email.EmailAt.Format("2006-01-02T15:04:05.000000Z")},
		"users": map[string]any{"from": from, "to": keyed(c.Users.To), "cc": keyed(c.Users.CC), "bcc": keyed(c.Users.BCC)},
	})
	if err != nil {
		panic(err)
	}
	return raw
}

// benchPool opens a pool of one connection on the test database, so that
// the statistics counters read after a load include everything it wrote.
func benchPool(b *testing.B) *pgxpool.Pool {
	b.Helper()
	pool, err := warehouse.Connect(context.Background(), warehousetest.DSN(b), warehouse.PoolOptions{MaxConns: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	var fsync, syncCommit, fpw string
	if err := pool.QueryRow(context.Background(), "SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('full_page_writes')").
		Scan(&fsync, &syncCommit, &fpw); err != nil {
		b.Fatal(err)
	}
	b.Logf("server: fsync=%s synchronous_commit=%s full_page_writes=%s", fsync, syncCommit, fpw)
	return pool
}

// rawCopier copies a page's e-mail, recipient and user rows into unlogged,
// index-free copies of the tables: the floor of what loading can cost.
type rawCopier struct {
	tables []*spec
	names  []pgx.Identifier
}

func newRawCopier(b *testing.B, pool *pgxpool.Pool, schema string) *rawCopier {
	r := &rawCopier{}
	for _, name := range []string{"users", "emails", "email_recipients"} {
		raw := pgx.Identifier{schema, "raw_" + name}
		if _, err := pool.Exec(context.Background(), fmt.Sprintf("CREATE UNLOGGED TABLE %s (LIKE %s INCLUDING DEFAULTS)",
			raw.Sanitize(), pgx.Identifier{schema, name}.Sanitize())); err != nil {
			b.Fatal(err)
		}
		r.tables = append(r.tables, specByName(b, name))
		r.names = append(r.names, raw)
	}
	return r
}

func (r *rawCopier) copy(ctx context.Context, pool *pgxpool.Pool, batch *transform.Batch) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for i, t := range r.tables {
			rows, err := t.rows(batch)
			if err != nil {
				return err
			}
			if _, err := tx.CopyFrom(ctx, r.names[i], t.columnNames(), pgx.CopyFromRows(rows)); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkLoadEmails loads the same 1000-e-mail pages through Commit
// (normalized, indexed, logged tables; a checkpoint per page) and by raw
// COPY into unlogged index-free tables, page by page alternately, and
// reports both rates and their ratio (target ≥ 0.5). The sub-benchmarks
// differ in how a page commits: the default (synchronous_commit off for
// pages) and Config.SyncCommit (each page waits for its WAL flush).
func BenchmarkLoadEmails(b *testing.B) {
	for _, mode := range []struct {
		name string
		sync bool
	}{{"default", false}, {"sync_commit", true}} {
		b.Run(mode.name, func(b *testing.B) { benchmarkLoadEmails(b, mode.sync) })
	}
}

func benchmarkLoadEmails(b *testing.B, syncCommit bool) {
	ctx := context.Background()
	pool := benchPool(b)
	gen := newCommsGenerator()
	pages := (*benchEmails + benchPageSize - 1) / benchPageSize
	var normalized, raw time.Duration
	var emails int
	for b.Loop() {
		b.StopTimer()
		schema := warehousetest.NewSchemaName(b)
		if err := warehouse.Migrate(ctx, pool, schema, nil); err != nil {
			b.Fatal(err)
		}
		store, err := New(pool, Config{Schema: schema, SyncCommit: syncCommit})
		if err != nil {
			b.Fatal(err)
		}
		copier := newRawCopier(b, pool, schema)
		b.StartTimer()
		for n := range pages {
			b.StopTimer()
			batch := gen.page(n)
			b.StartTimer()

			start := time.Now()
			if err := copier.copy(ctx, pool, &batch); err != nil {
				b.Fatalf("raw copy: %v", err)
			}
			raw += time.Since(start)

			start = time.Now()
			at := batch.Column("emails", "email_at")
			last := at[len(at)-1].(time.Time)
			cp := &Checkpoint{Watermark: &last, Cursor: json.RawMessage(fmt.Sprintf(`{"page":%d}`, n+2))}
			if _, err := store.commitPage(ctx, page{stream: "communications", batch: batch, state: cp}); err != nil {
				b.Fatalf("commit page: %v", err)
			}
			normalized += time.Since(start)
			emails += batch.Len("emails")
		}
	}
	rawRate := float64(emails) / raw.Seconds()
	normRate := float64(emails) / normalized.Seconds()
	b.ReportMetric(normRate, "normalized_emails/s")
	b.ReportMetric(rawRate, "rawcopy_emails/s")
	b.ReportMetric(normRate/rawRate, "ratio")
}

// tableStats are the schema's cumulative tuple counters.
type tableStats struct{ ins, upd, del int64 }

func schemaStats(b *testing.B, pool *pgxpool.Pool, schema string) tableStats {
	b.Helper()
	ctx := context.Background()
	// Flush this backend's pending counters (the pool has one connection:
	// the one that loaded).
	if _, err := pool.Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		b.Fatal(err)
	}
	var s tableStats
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_del), 0)
FROM pg_stat_user_tables WHERE schemaname = $1 AND relname <> ALL ($2)`, schema, []string{"sync_state", "goose_db_version"}).
		Scan(&s.ins, &s.upd, &s.del); err != nil {
		b.Fatal(err)
	}
	return s
}

func walLSN(b *testing.B, pool *pgxpool.Pool) string {
	var lsn string
	if err := pool.QueryRow(context.Background(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}

func walSince(b *testing.B, pool *pgxpool.Pool, lsn string) int64 {
	var n int64
	if err := pool.QueryRow(context.Background(), "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint", lsn).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkReloadUnchanged loads the e-mails once, then loads the same pages
// again, and reports the tuples written (inserted + updated + deleted in the
// warehouse's data tables, from pg_stat_user_tables) and the WAL bytes of
// both passes. WAL is measured server-wide: other sessions add to it.
func BenchmarkReloadUnchanged(b *testing.B) {
	ctx := context.Background()
	pool := benchPool(b)
	gen := newCommsGenerator()
	pages := (*benchEmails + benchPageSize - 1) / benchPageSize
	var firstTuples, reloadTuples, firstWAL, reloadWAL int64
	var firstTime, reloadTime time.Duration
	runs := 0
	for b.Loop() {
		runs++
		b.StopTimer()
		schema := warehousetest.NewSchemaName(b)
		if err := warehouse.Migrate(ctx, pool, schema, nil); err != nil {
			b.Fatal(err)
		}
		store, err := New(pool, Config{Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		pass := func(tuples, wal *int64, took *time.Duration) {
			b.StopTimer()
			before, lsn := schemaStats(b, pool, schema), walLSN(b, pool)
			var elapsed time.Duration
			for n := range pages {
				batch := gen.page(n)
				b.StartTimer()
				start := time.Now()
				if _, err := store.commitPage(ctx, page{stream: "communications", batch: batch}); err != nil {
					b.Fatalf("commit page: %v", err)
				}
				elapsed += time.Since(start)
				b.StopTimer()
			}
			*wal += walSince(b, pool, lsn)
			after := schemaStats(b, pool, schema)
			*tuples += (after.ins - before.ins) + (after.upd - before.upd) + (after.del - before.del)
			*took += elapsed
			b.StartTimer()
		}
		pass(&firstTuples, &firstWAL, &firstTime)
		pass(&reloadTuples, &reloadWAL, &reloadTime)
	}
	b.ReportMetric(float64(firstTuples)/float64(runs), "first_tuples")
	b.ReportMetric(float64(reloadTuples)/float64(runs), "reload_tuples")
	b.ReportMetric(float64(firstWAL)/float64(runs), "first_WAL_bytes")
	b.ReportMetric(float64(reloadWAL)/float64(runs), "reload_WAL_bytes")
	b.ReportMetric(float64(reloadWAL)/float64(firstWAL), "reload/first_WAL")
	emails := float64(runs * pages * benchPageSize)
	b.ReportMetric(emails/firstTime.Seconds(), "first_emails/s")
	b.ReportMetric(emails/reloadTime.Seconds(), "reload_emails/s")
}
