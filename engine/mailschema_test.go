package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/warehousetest"
)

// mailSchema is a fresh schema that the harnesses on a hand-written
// communications server (mailHarness, dayMailHarness) sync into.
type mailSchema struct {
	t      *testing.T
	pool   *pgxpool.Pool
	schema string
}

func newMailSchema(t *testing.T) mailSchema {
	t.Helper()
	pool, schema := warehousetest.Schema(t)
	return mailSchema{t: t, pool: pool, schema: schema}
}

// mailQuery is the body of a communications request, as the hand-written
// servers read it.
type mailQuery struct {
	DateStart string `json:"date_start"`
	DateEnd   string `json:"date_end"`
	Page      int    `json:"page"`
	PerPage   int    `json:"per_page"`
}

// mailEngine is what the engines on a hand-written communications server
// differ in.
type mailEngine struct {
	url         string // the server (both interfaces)
	now         func() time.Time
	start       time.Time // MailSettings.StartDate
	perPage     int       // the client's per_page (0: default)
	rate        float64
	maxAttempts int // the client's (0: default)
	dailyQuota  int
	tune        func(*Settings)
}

// engine builds an engine syncing the communications of domain 1, user 1
// from the server at m.url into the schema, with quick retries and the
// test's logs.
func (w mailSchema) engine(m mailEngine) *Engine {
	t := w.t
	t.Helper()
	log := zaptest.NewLogger(t)
	store, ledger := storeAndLedger(t, w.pool, w.schema, log, m.now)
	client, err := extract.New(extract.Options{BaseURL: m.url, APIKey: "k", CommsURL: m.url, CommsKey: "ck", PerPage: m.perPage,
		RateLimit: m.rate, Counter: ledger, Logger: log, RetryInitialInterval: time.Millisecond, RetryMaxInterval: 5 * time.Millisecond,
		MaxAttempts: m.maxAttempts})
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{Schema: w.schema, Mail: MailSettings{DomainID: 1, UserIDs: []int64{1}, StartDate: m.start}, DailyQuota: m.dailyQuota, Now: m.now}
	if m.tune != nil {
		m.tune(&s)
	}
	eng, err := New(Deps{Pool: w.pool, Store: store, Ledger: ledger, Client: client, Logger: log}, s)
	if err != nil {
		t.Fatal(err)
	}
	return eng
}

// table is the schema's table name, quoted for SQL.
func (w mailSchema) table(name string) string { return pgx.Identifier{w.schema, name}.Sanitize() }

// ids lists the ids of the e-mails in the warehouse that match where,
// ascending.
func (w mailSchema) ids(where string) []int64 {
	w.t.Helper()
	rows, err := w.pool.Query(context.Background(), "SELECT record_id FROM "+w.table("emails")+" WHERE "+where+" ORDER BY 1")
	if err != nil {
		w.t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		w.t.Fatal(err)
	}
	return ids
}

// commsCursor reads the communications cursor the warehouse holds.
func (w mailSchema) commsCursor() (commsCursor, error) {
	var raw []byte
	var c commsCursor
	err := w.pool.QueryRow(context.Background(), "SELECT cursor FROM "+w.table("sync_state")+
		" WHERE stream = $1 AND partition = ''", "communications").Scan(&raw)
	if err != nil {
		return c, fmt.Errorf("read communications cursor: %w", err)
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("decode communications cursor: %w", err)
	}
	return c, nil
}
