package warehouse_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/warehouse"
)

// TestLocalClusterKeepsData starts a private cluster on a kept data folder
// twice: what the first run wrote, the second finds (the demo's warehouse).
func TestLocalClusterKeepsData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(reachableDir(t), "data")
	for i, stmt := range []string{"CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)", ""} {
		c, err := warehouse.StartLocal(ctx, fastLocal(dir))
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		conn, err := pgx.Connect(ctx, c.DSN())
		if err != nil {
			t.Fatal(err)
		}
		if stmt != "" {
			_, err = conn.Exec(ctx, stmt)
		} else {
			var x int
			err = conn.QueryRow(ctx, "SELECT x FROM kept").Scan(&x)
			if err == nil && x != 42 {
				t.Errorf("kept x = %d", x)
			}
		}
		conn.Close(ctx)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PG_VERSION")); err != nil {
		t.Fatalf("kept data folder was removed: %v", err)
	}
}

func TestNoBinariesIsAClearError(t *testing.T) {
	_, err := warehouse.StartLocal(context.Background(), warehouse.LocalOptions{BinDir: t.TempDir()})
	if !errors.Is(err, warehouse.ErrNoPostgres) || !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Fatalf("StartLocal without binaries = %v, want ErrNoPostgres with an install hint", err)
	}
}

// TestLocalClusterAttachesToRunning: a second StartLocal on a data folder
// whose server runs uses that server, and its Stop leaves it running for its
// owner (psql while serve runs, run while psql is open).
func TestLocalClusterAttachesToRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(reachableDir(t), "data")
	owner, err := warehouse.StartLocal(ctx, fastLocal(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Stop()
	if owner.Attached() {
		t.Fatal("the first StartLocal says it attached")
	}
	second, err := warehouse.StartLocal(ctx, fastLocal(dir))
	if err != nil {
		t.Fatalf("second StartLocal on a running data folder: %v", err)
	}
	if !second.Attached() || second.DSN() != owner.DSN() {
		t.Fatalf("second StartLocal: attached %v dsn %q, want the owner's %q", second.Attached(), second.DSN(), owner.DSN())
	}
	if err := second.Stop(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, owner.DSN())
	if err != nil {
		t.Fatalf("the owner's server stopped with the attached one: %v", err)
	}
	conn.Close(ctx)
	if err := owner.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); !os.IsNotExist(err) {
		t.Fatalf("postmaster.pid after the owner's Stop: %v", err)
	}
}

// TestLocalClusterCreatesReachableParents: a data folder whose parents do not
// exist yet (the default ~/.local/share/agencysync/postgres, or
// /var/lib/agencysync/postgres as root) gets parents the server's user can
// traverse.
func TestLocalClusterCreatesReachableParents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := reachableDir(t)
	c, err := warehouse.StartLocal(ctx, fastLocal(filepath.Join(base, "share", "agencysync", "postgres")))
	if err != nil {
		t.Fatalf("StartLocal on a data folder with missing parents: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}

// reachableDir is a new folder, removed after the test, that the server's
// user can traverse (t.TempDir's parents are private to the test's user).
func reachableDir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "agencysync-"+strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

// fastLocal is a private cluster on the data folder dir with the test
// machine's PostgreSQL binaries (PG_BINDIR) and durability off.
func fastLocal(dir string) warehouse.LocalOptions {
	return warehouse.LocalOptions{DataDir: dir, BinDir: os.Getenv("PG_BINDIR"), Fast: true}
}
