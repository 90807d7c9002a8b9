// Package warehousetest gives each test a fresh warehouse schema with every
// migration applied, on one pool shared by the test binary (the pattern of
// river's riverdbtest.TestSchema).
//
// With DATABASE_URL set, that database is used. Without it, a private
// throwaway cluster is started on first use; the package's TestMain must then
// call Main so the cluster stops when the tests end. A database test never
// skips: without a database it fails, saying why.
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
)

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
	if pool != nil {
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
		c, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{Fast: true})
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
	return nil
}

// Schema creates a fresh schema with every migration applied, drops it when
// the test ends, and returns the shared pool and the schema's name.
func Schema(t testing.TB) (*pgxpool.Pool, string) {
	t.Helper()
	p := Pool(t)
	name := NewSchemaName(t)
	ctx := context.Background()
	if err := warehouse.Migrate(ctx, p, name, nil); err != nil {
		t.Fatalf("warehousetest: migrate %s: %v", name, err)
	}
	return p, name
}

// NewSchemaName returns an unused schema name, dropped (with everything in
// it) when the test ends. The schema itself is not created.
func NewSchemaName(t testing.TB) string {
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
