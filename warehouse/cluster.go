package warehouse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// ErrNoPostgres means no PostgreSQL server binaries were found for a private
// cluster. Its message carries a one-line install hint.
var ErrNoPostgres = errors.New("no PostgreSQL server binaries found: install them (Debian: apt-get install postgresql) or set PG_BINDIR, or set DATABASE_URL")

// LocalOptions configures a private PostgreSQL cluster.
type LocalOptions struct {
	// DataDir holds the cluster's data. It is created (initdb) when empty and
	// reused otherwise. Empty means a throwaway directory removed by Stop.
	DataDir string
	// BinDir holds initdb and postgres (PG_BINDIR); empty: the newest
	// /usr/lib/postgresql/*/bin, then PATH.
	BinDir string
	// Fast trades durability for speed (fsync off): right for tests.
	Fast bool
	// Logger receives progress lines; nil logs nothing.
	Logger *zap.Logger
}

// LocalCluster is a private PostgreSQL server started on a free 127.0.0.1 port
// with its own socket folder, for the demo and the test suite.
type LocalCluster struct {
	dsn       string
	dataDir   string
	socketDir string
	throwaway bool
	attached  bool // a server already running on dataDir; Stop leaves it running
	cmd       *exec.Cmd
	exited    chan struct{}
	logPath   string
	log       *zap.Logger
}

// StartLocal finds the server binaries (opts.BinDir, then
// /usr/lib/postgresql/*/bin, newest first, then PATH), initialises the data
// directory if needed and starts postgres on a free loopback port. When the
// process runs as root, initdb and postgres run as the unprivileged user
// "postgres" (or "nobody"), since they refuse to run as root.
func StartLocal(ctx context.Context, opts LocalOptions) (*LocalCluster, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	bindir, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	cred, owner, err := unprivileged()
	if err != nil {
		return nil, err
	}
	c := &LocalCluster{dataDir: opts.DataDir, log: log, exited: make(chan struct{})}
	if running, err := c.resolveDataDir(ctx); err != nil || running {
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	// The socket path must stay short (108 bytes), so it lives in /tmp.
	if c.socketDir, err = os.MkdirTemp("", "agencysync-pgsock-"); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	started := false
	defer func() {
		if !started {
			c.cleanup()
		}
	}()
	if err := c.prepareDirs(owner); err != nil {
		return nil, err
	}
	if err := c.initdb(ctx, bindir, cred); err != nil {
		return nil, err
	}
	port, err := c.startServer(bindir, cred, opts.Fast)
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, 60*time.Second); err != nil {
		c.stopServer()
		// Another process may have started the same data folder meanwhile.
		if other := c.startedElsewhere(ctx); other != nil {
			return other, nil
		}
		return nil, err
	}
	started = true
	log.Info("private PostgreSQL cluster started", zap.Int("port", port), zap.String("data_dir", c.dataDir))
	return c, nil
}

// resolveDataDir makes the data folder absolute, or creates a throwaway one
// when none is named. It reports whether a server already runs on a named
// folder: c is then attached to it.
func (c *LocalCluster) resolveDataDir(ctx context.Context) (running bool, err error) {
	if c.dataDir == "" {
		c.throwaway = true
		if c.dataDir, err = os.MkdirTemp("", "agencysync-pgdata-"); err != nil {
			return false, fmt.Errorf("create data directory: %w", err)
		}
		return false, nil
	}
	if c.dataDir, err = filepath.Abs(c.dataDir); err != nil {
		return false, fmt.Errorf("resolve data directory: %w", err)
	}
	dsn, ok := runningServer(ctx, c.dataDir, 30*time.Second)
	if !ok {
		return false, nil
	}
	c.dsn, c.attached = dsn, true
	close(c.exited)
	c.log.Info("private PostgreSQL cluster already running; using it", zap.String("data_dir", c.dataDir))
	return true, nil
}

// prepareDirs creates the data folder and gives it and the socket folder to
// the server's user, who must be able to reach them.
func (c *LocalCluster) prepareDirs(o owner) error {
	if o.uid >= 0 {
		// The server's user must traverse the folders this creates above its data.
		if err := mkdirTraversable(filepath.Dir(c.dataDir)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	for _, dir := range []string{c.dataDir, c.socketDir} {
		if err := chownTree(dir, o); err != nil {
			return err
		}
	}
	return parentsTraversable(c.dataDir, o)
}

// initdb initialises the data folder unless it holds a cluster already.
func (c *LocalCluster) initdb(ctx context.Context, bindir string, cred *syscall.Credential) error {
	if _, err := os.Stat(filepath.Join(c.dataDir, "PG_VERSION")); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	c.log.Info("initialising private PostgreSQL cluster", zap.String("data_dir", c.dataDir))
	initdb := exec.CommandContext(ctx, filepath.Join(bindir, "initdb"),
		"-D", c.dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("run initdb: %w: %s", err, lastLines(out, 5))
	}
	return nil
}

// startServer starts postgres on a free loopback port, its log in the
// socket folder, and returns the port; c.exited closes when it exits.
func (c *LocalCluster) startServer(bindir string, cred *syscall.Credential, fast bool) (int, error) {
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	c.logPath = filepath.Join(c.socketDir, "postgres.log")
	logFile, err := os.Create(c.logPath)
	if err != nil {
		return 0, fmt.Errorf("create server log: %w", err)
	}
	defer logFile.Close()
	args := []string{"-D", c.dataDir, "-p", strconv.Itoa(port), "-k", c.socketDir,
		"-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "shared_buffers=128MB"}
	if fast {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	c.cmd = exec.Command(filepath.Join(bindir, "postgres"), args...)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	// Pdeathsig stops the server if this process dies without calling Stop.
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return 0, fmt.Errorf("start postgres: %w", err)
	}
	go func() { _ = c.cmd.Wait(); close(c.exited) }()
	c.dsn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return port, nil
}

// startedElsewhere returns, for a named data folder whose server did not
// come up, the cluster another process started on it meanwhile (attached),
// or nil.
func (c *LocalCluster) startedElsewhere(ctx context.Context) *LocalCluster {
	if c.throwaway {
		return nil
	}
	dsn, ok := runningServer(ctx, c.dataDir, 30*time.Second)
	if !ok {
		return nil
	}
	c.cleanup()
	c.log.Info("private PostgreSQL cluster started by another process; using it", zap.String("data_dir", c.dataDir))
	return &LocalCluster{dsn: dsn, dataDir: c.dataDir, attached: true, exited: c.exited, log: c.log}
}

// Attached reports whether StartLocal found the server already running on
// the data folder (started by another agencysync process) and used it: Stop
// then leaves it running for its owner.
func (c *LocalCluster) Attached() bool { return c.attached }

// DSN returns the connection string of the cluster's postgres database.
func (c *LocalCluster) DSN() string { return c.dsn }

// Stop shuts the server down (fast mode) and removes throwaway directories.
// An attached cluster (see Attached) is left running.
func (c *LocalCluster) Stop() error {
	if c.attached {
		return nil
	}
	err := c.stopServer()
	c.cleanup()
	return err
}

func (c *LocalCluster) stopServer() error {
	if c.cmd == nil || c.cmd.Process == nil {
		return nil
	}
	select {
	case <-c.exited:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT) // fast shutdown
	select {
	case <-c.exited:
		return nil
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return errors.New("stop postgres: fast shutdown timed out, killed")
	}
}

func (c *LocalCluster) cleanup() {
	if c.throwaway && c.dataDir != "" {
		_ = os.RemoveAll(c.dataDir)
	}
	if c.socketDir != "" {
		_ = os.RemoveAll(c.socketDir)
	}
}

func (c *LocalCluster) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		conn, err := pgx.Connect(ctx, c.dsn)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.exited:
			log, _ := os.ReadFile(c.logPath)
			return fmt.Errorf("start postgres: server exited: %s", lastLines(log, 5))
		case <-ctx.Done():
			return fmt.Errorf("start postgres: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start postgres: not ready after %s: %w", limit, err)
		}
	}
}

// findBinDir looks for a folder holding initdb and postgres: dir when set
// (PG_BINDIR), else the newest /usr/lib/postgresql/*/bin, then PATH.
func findBinDir(dir string) (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("PG_BINDIR=%s has no initdb and postgres: %w", dir, ErrNoPostgres)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", ErrNoPostgres
}

func versionOf(bindir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return v
}

type owner struct{ uid, gid int }

// unprivileged returns the credential to run the server with: none when not
// root, else the postgres (or nobody) user.
func unprivileged() (*syscall.Credential, owner, error) {
	if os.Geteuid() != 0 {
		return nil, owner{-1, -1}, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, owner{uid, gid}, nil
	}
	return nil, owner{}, errors.New("start postgres: running as root and no unprivileged user (postgres or nobody) exists to run initdb and postgres")
}

func chownTree(dir string, o owner) error {
	if o.uid < 0 {
		return nil
	}
	err := filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, o.uid, o.gid)
	})
	if err != nil {
		return fmt.Errorf("hand %s to the server's user: %w", dir, err)
	}
	return nil
}

// parentsTraversable checks that the unprivileged user can reach the data
// directory, and says so clearly when it cannot (e.g. a checkout under /root).
func parentsTraversable(dir string, o owner) error {
	if o.uid < 0 {
		return nil
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("check data directory: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if ok && int(st.Uid) != o.uid && fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("start postgres: %s is not traversable by the server's user (uid %d); set WAREHOUSE_LOCAL_DIR to a folder it can reach, e.g. under /tmp", p, o.uid)
		}
		if p == "/" {
			return nil
		}
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(bytes.ToValidUTF8(b, nil))), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
