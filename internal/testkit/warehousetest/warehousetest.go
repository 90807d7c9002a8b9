// Package warehousetest gives each test a fresh warehouse schema with every
// migration applied, on one pool shared by the test binary (the pattern of
// river's riverdbtest.TestSchema).
//
// With DATABASE_URL set, that database is used. Without it, a private
// throwaway cluster is started on first use; the package's TestMain must then
// call Main so the cluster stops when the tests end. A database test never
// skips: without a database it fails, saying why.
//
// With AGENCYSYNC_TEST_SCHEMA_OWNER=1 the suite runs as the least-privileged
// deployment does: DSN, which the binaries and commands under test connect
// with, names a login role that owns each test's schema (created by
// NewSchemaName) and has no CREATE on the database. Pool stays the
// harness's own connection, for setting up and checking.
package warehousetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/warehouse"
)

var (
	mu       sync.Mutex
	inMain   bool
	pool     *pgxpool.Pool
	dsn      string
	cluster  *warehouse.LocalCluster
	setupErr error
	// ownerRole and ownerDSN: the schema-owner role of the
	// AGENCYSYNC_TEST_SCHEMA_OWNER mode ("" otherwise).
	ownerRole, ownerDSN string
	ownerPool           *pgxpool.Pool
)

// ownerPoolFor returns a pool connected as the schema-owner role.
func ownerPoolFor(t testing.TB) *pgxpool.Pool {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if ownerPool == nil {
		p, err := warehouse.Connect(context.Background(), ownerDSN, warehouse.PoolOptions{StatementTimeout: time.Minute, MaxConns: 4})
		if err != nil {
			t.Fatalf("warehousetest: connect as %s: %v", ownerRole, err)
		}
		ownerPool = p
	}
	return ownerPool
}

// SchemaOwnerMode reports whether AGENCYSYNC_TEST_SCHEMA_OWNER=1: the
// commands under test connect as a role that owns only its schemas.
func SchemaOwnerMode() bool { return os.Getenv("AGENCYSYNC_TEST_SCHEMA_OWNER") == "1" }

// Main runs the tests of a package that uses this harness and stops the
// private cluster, if one was started. Call it from TestMain:
//
//	func TestMain(m *testing.M) { warehousetest.Main(m) }
func Main(m *testing.M) {
	mu.Lock()
	inMain = true
	mu.Unlock()
	code := m.Run()
	mu.Lock()
	if ownerPool != nil {
		ownerPool.Close()
	}
	if pool != nil {
		if ownerRole != "" {
			if err := dropRole(pool, ownerRole); err != nil {
				fmt.Fprintln(os.Stderr, "warehousetest:", err)
			}
		}
		pool.Close()
	}
	if cluster != nil {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "warehousetest:", err)
		}
	}
	mu.Unlock()
	os.Exit(code)
}

// DSN returns the connection string of the test database, starting the
// private cluster if needed. End-to-end tests pass it to the binaries.
func DSN(t testing.TB) string {
	t.Helper()
	Pool(t)
	if ownerDSN != "" {
		return ownerDSN
	}
	return dsn
}

// Pool returns the pool shared by the test binary.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if pool == nil && setupErr == nil {
		setupErr = setup()
	}
	if setupErr != nil {
		t.Fatalf("warehousetest: no database: %v", setupErr)
	}
	return pool
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn = os.Getenv("DATABASE_URL")
	if dsn == "" {
		if !inMain {
			return errors.New("DATABASE_URL is unset and the package's TestMain does not call warehousetest.Main, which a private cluster needs")
		}
		c, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{BinDir: os.Getenv("PG_BINDIR"), Fast: true})
		if err != nil {
			return fmt.Errorf("DATABASE_URL is unset and the private cluster did not start: %w", err)
		}
		cluster, dsn = c, c.DSN()
	}
	p, err := warehouse.Connect(ctx, dsn, warehouse.PoolOptions{StatementTimeout: time.Minute, MaxConns: 20})
	if err != nil {
		return err
	}
	pool = p
	if SchemaOwnerMode() {
		return setupOwner(ctx)
	}
	return nil
}

// setupOwner creates the schema-owner role of the whole test binary and
// checks that it has no CREATE on the database.
func setupOwner(ctx context.Context) error {
	var b [6]byte
	_, _ = rand.Read(b[:])
	role := "agencysync_owner_" + hex.EncodeToString(b[:])
	if _, err := pool.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
		return fmt.Errorf("create the schema-owner role: %w", err)
	}
	ownerRole = role
	var canCreate bool
	if err := pool.QueryRow(ctx, "SELECT has_database_privilege($1, current_database(), 'CREATE')", role).Scan(&canCreate); err != nil {
		return fmt.Errorf("check the schema-owner role's rights: %w", err)
	}
	if canCreate {
		return fmt.Errorf("role %s has CREATE on the test database (granted to PUBLIC?): not a least-privileged role", role)
	}
	d, err := WithUser(dsn, role)
	if err != nil {
		return err
	}
	ownerDSN = d
	return nil
}

// dropRole ends the role's sessions and drops what it owns and the role.
func dropRole(p *pgxpool.Pool, role string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ident := pgx.Identifier{role}.Sanitize()
	if _, err := p.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", role); err != nil {
		return fmt.Errorf("end sessions of %s: %w", role, err)
	}
	for _, q := range []string{"DROP OWNED BY " + ident + " CASCADE", "DROP ROLE " + ident} {
		var err error
		for range 50 { // terminated backends leave asynchronously
			if _, err = p.Exec(ctx, q); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// Schema creates a fresh schema with every migration applied, drops it when
// the test ends, and returns the shared pool and the schema's name.
func Schema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	p := Pool(t)
	name := NewSchemaName(t)
	ctx := context.Background()
	mp := p
	if ownerRole != "" {
		mp = ownerPoolFor(t) // the tables are the owner role's, as in such a deployment
	}
	if err := warehouse.Migrate(ctx, mp, name, nil); err != nil {
		t.Fatalf("warehousetest: migrate %s: %v", name, err)
	}
	return p, name
}

// NewSchemaName returns an unused schema name, dropped (with everything in
// it) when the test ends. The schema itself is not created — except with
// AGENCYSYNC_TEST_SCHEMA_OWNER=1, where it is created empty and owned by the
// schema-owner role, as an administrator prepares it for such a deployment.
func NewSchemaName(t testing.TB) string {
	t.Helper()
	name := newSchemaName(t)
	if ownerRole != "" {
		if _, err := Pool(t).Exec(context.Background(), "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()+" AUTHORIZATION "+pgx.Identifier{ownerRole}.Sanitize()); err != nil {
			t.Fatalf("warehousetest: create schema %s for %s: %v", name, ownerRole, err)
		}
	}
	return name
}

// UnusedSchemaName is NewSchemaName without creating the schema in any
// mode: for the tests of what happens when a schema is missing.
func UnusedSchemaName(t testing.TB) string {
	t.Helper()
	return newSchemaName(t)
}

// newSchemaName is NewSchemaName without creating the schema in any mode.
func newSchemaName(t testing.TB) string {
	t.Helper()
	p := Pool(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := p.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("warehousetest: drop schema %s: %v", name, err)
		}
	})
	return name
}

// Querier is what Counts reads through: a pool, a connection or a
// transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Counts runs sql, whose rows are a text and a count (a day and its
// requests, a status and its runs), and returns the counts by text. It fails
// the test on any error.
func Counts[N int | int64](t testing.TB, q Querier, sql string, args ...any) map[string]N {
	t.Helper()
	rows, err := q.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out := map[string]N{}
	for rows.Next() {
		var k string
		var n N
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		out[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}
