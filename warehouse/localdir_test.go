package warehouse_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agencysync/agencysync/warehouse"
)

// TestLocalClusterAttachesToRunning: a second StartLocal on a data folder
// whose server runs uses that server, and its Stop leaves it running for its
// owner (psql while serve runs, run while psql is open).
func TestLocalClusterAttachesToRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, err := os.MkdirTemp("", "agencysync-attach-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "data")
	owner, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{DataDir: dir, BinDir: os.Getenv("PG_BINDIR"), Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Stop()
	if owner.Attached() {
		t.Fatal("the first StartLocal says it attached")
	}
	second, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{DataDir: dir, BinDir: os.Getenv("PG_BINDIR"), Fast: true})
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
	base, err := os.MkdirTemp("", "agencysync-parents-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{DataDir: filepath.Join(base, "share", "agencysync", "postgres"), BinDir: os.Getenv("PG_BINDIR"), Fast: true})
	if err != nil {
		t.Fatalf("StartLocal on a data folder with missing parents: %v", err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}
