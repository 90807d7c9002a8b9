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
	base, err := os.MkdirTemp("", "agencysync-keep-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil { // the server's user must reach it
		t.Fatal(err)
	}
	dir := filepath.Join(base, "data")
	for i, stmt := range []string{"CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)", ""} {
		c, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{DataDir: dir, BinDir: os.Getenv("PG_BINDIR"), Fast: true})
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
