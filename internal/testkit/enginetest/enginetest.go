// Package enginetest wires a real engine to an in-process sandbox and a
// fresh warehouse schema, for the tests of the packages around the engine
// (serve, notify) that need real runs.
package enginetest

import (
	"cmp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/metrics"
	"github.com/agencysync/agencysync/progress"
	"github.com/agencysync/agencysync/stream"
)

// Kit is an engine on a sandbox and a fresh schema.
type Kit struct {
	T      *testing.T
	SB     *sandbox.Server
	Opts   sandbox.Options
	Pool   *pgxpool.Pool
	Schema string
	// Eng is the engine Engine built last.
	Eng *engine.Engine
	// APIURL is the main interface's address (default the sandbox's).
	APIURL string
	// CommsURL is the communications endpoint's address (default the
	// sandbox's).
	CommsURL string
	// Live, when set, receives the progress of the engine's runs.
	Live *progress.Live
	// RealClock runs the engine and its ledger on the real clock instead
	// of the sandbox's (the quota day then matches sync_runs' timestamps).
	RealClock bool
	// Streams are the declarations the engine runs, its store writes and
	// its client asks (nil: stream.All()).
	Streams []*stream.Stream
}

// SmallSandbox is a sandbox of 4 brands, 12 projects, 20 users and 2500
// e-mails over 60 days, without rate limits (sandbox.SmallOptions).
func SmallSandbox() sandbox.Options { return sandbox.SmallOptions() }

// New starts a sandbox with o on a fresh schema and builds an engine.
func New(t *testing.T, o sandbox.Options) *Kit {
	t.Helper()
	pool, schema := warehousetest.Schema(t)
	sb := sandbox.StartT(t, o)
	k := &Kit{T: t, SB: sb, Opts: o, Pool: pool, Schema: schema}
	k.Engine()
	return k
}

// Engine builds an engine on the kit's sandbox and schema with the kit's
// APIURL and clock, and keeps it in Eng.
func (k *Kit) Engine() *engine.Engine {
	t := k.T
	log := zaptest.NewLogger(t)
	store, err := load.New(k.Pool, load.Config{Schema: k.Schema, Logger: log, Streams: k.Streams})
	if err != nil {
		t.Fatal(err)
	}
	clock := k.SB.Now
	if k.RealClock {
		clock = time.Now
	}
	ledger, err := load.NewLedger(k.Pool, k.Schema, time.UTC, clock)
	if err != nil {
		t.Fatal(err)
	}
	var eng *engine.Engine
	client, err := extract.New(extract.Options{
		BaseURL: cmp.Or(k.APIURL, k.SB.APIURL()), APIKey: k.Opts.APIKey, CommsURL: cmp.Or(k.CommsURL, k.SB.CommsURL()), CommsKey: k.Opts.CommsKey,
		RateLimit: 500, Counter: ledger, Logger: log, RetryInitialInterval: 10 * time.Millisecond, RetryMaxInterval: 50 * time.Millisecond,
		Hook:    func(info extract.RequestInfo) { eng.ObserveRequest(info) },
		Streams: k.Streams,
	})
	if err != nil {
		t.Fatal(err)
	}
	users := make([]int64, k.Opts.Users)
	for i := range users {
		users[i] = int64(i + 1)
	}
	s := engine.Settings{Schema: k.Schema,
		Mail:       engine.MailSettings{DomainID: k.Opts.DomainID, UserIDs: users, StartDate: k.Opts.Start.AddDate(0, 0, -k.Opts.HistoryDays-1)},
		DailyQuota: 10000, QuotaReserve: 0.05, Now: clock,
		Streams: k.Streams}
	eng, err = engine.New(engine.Deps{Pool: k.Pool, Store: store, Ledger: ledger, Client: client, Metrics: metrics.New(nil),
		Live: k.Live, Logger: log}, s)
	if err != nil {
		t.Fatal(err)
	}
	k.Eng = eng
	return eng
}

// CreateTables creates the tables of s in the kit's schema as a migration
// would (a test's own stream has none): each declared column with its SQL
// type, the key columns as the primary key, _synced_at, and _deleted_at
// for a table with soft deletes.
func (k *Kit) CreateTables(s *stream.Stream) {
	k.T.Helper()
	for _, t := range s.Tables() {
		var cols, key []string
		for _, c := range t.Columns {
			col := pgx.Identifier{c.Name}.Sanitize() + " " + c.Type.SQL()
			if c.Key {
				col += " NOT NULL"
				key = append(key, pgx.Identifier{c.Name}.Sanitize())
			}
			cols = append(cols, col)
		}
		cols = append(cols, "_synced_at timestamptz NOT NULL DEFAULT now()")
		if t.SoftDelete {
			cols = append(cols, "_deleted_at timestamptz")
		}
		cols = append(cols, "PRIMARY KEY ("+strings.Join(key, ", ")+")")
		ddl := "CREATE TABLE " + pgx.Identifier{k.Schema, t.Name}.Sanitize() + " (" + strings.Join(cols, ", ") + ")"
		if _, err := k.Pool.Exec(k.T.Context(), ddl); err != nil {
			k.T.Fatalf("create table %s: %v", t.Name, err)
		}
	}
}
