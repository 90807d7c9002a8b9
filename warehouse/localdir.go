package warehouse

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// runningServer reads dataDir/postmaster.pid and returns the DSN of the server
// it names when that process is alive and answers on its loopback port within
// limit (it may still be starting). ok is false when no server runs there.
func runningServer(ctx context.Context, dataDir string, limit time.Duration) (dsn string, ok bool) {
	f, err := os.Open(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return "", false
	}
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, strings.TrimSpace(sc.Text()))
	}
	f.Close()
	// Lines: pid, data folder, start time, port, socket folder, listen address, …
	if len(lines) < 4 {
		return "", false
	}
	pid, err1 := strconv.Atoi(lines[0])
	port, err2 := strconv.Atoi(lines[3])
	if err1 != nil || err2 != nil || pid <= 0 || port <= 0 {
		return "", false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return "", false // a stale file: postgres removes it on its next start
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && !strings.HasPrefix(string(comm), "postgres") {
		return "", false // the pid was reused by another program
	}
	// A server that says it is ready answers at once; one still starting
	// (or shutting down) gets up to limit.
	if len(lines) >= 8 && lines[7] == "ready" {
		limit = min(limit, 2*time.Second)
	}
	dsn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(limit)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := pgx.Connect(cctx, dsn)
		cancel()
		if err == nil {
			_ = conn.Close(ctx)
			return dsn, true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", false
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ErrNoPsql means no psql binary was found.
var ErrNoPsql = errors.New("no psql found: install it (Debian: apt-get install postgresql-client) or set PG_BINDIR")

// PsqlPath finds psql: next to the server binaries (in binDir, PG_BINDIR,
// when set, else the newest /usr/lib/postgresql/*/bin), else on PATH.
func PsqlPath(binDir string) (string, error) {
	if dir, err := findBinDir(binDir); err == nil {
		p := filepath.Join(dir, "psql")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("psql"); err == nil {
		return p, nil
	}
	return "", ErrNoPsql
}

// mkdirTraversable creates dir and its missing parents with mode 0755
// whatever the umask, so that the unprivileged server's user can reach a
// data folder below them; existing folders are left as they are.
func mkdirTraversable(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := mkdirTraversable(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create data directory's parent: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("create data directory's parent: %w", err)
	}
	return nil
}
