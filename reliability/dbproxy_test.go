package reliability

import (
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/warehouse"
)

// dbProxy forwards TCP connections to a PostgreSQL server. The worker
// connects through it, so the test knows which server sessions are the
// worker's: those whose client_port is one of the proxy's upstream ports.
// (Every agencysync pool, the tests' own included, sets application_name
// 'agencysync', so that alone would also hit other tests' sessions.) Its
// target can change, which follows a restarted server to its new port.
type dbProxy struct {
	ln     net.Listener
	mu     sync.Mutex
	target string
	conns  map[net.Conn]net.Conn // client side → server side
	wg     sync.WaitGroup
}

func startDBProxy(t *testing.T, target string) *dbProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start the database proxy: %v", err)
	}
	p := &dbProxy{ln: ln, target: target, conns: map[net.Conn]net.Conn{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(p.close)
	return p
}

func (p *dbProxy) serve(c net.Conn) {
	p.mu.Lock()
	target := p.target
	p.mu.Unlock()
	s, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil { // the server is down: the client sees the connection close
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c] = s
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { _, _ = io.Copy(s, c); s.Close(); c.Close(); close(done) }()
	_, _ = io.Copy(c, s)
	c.Close()
	s.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// ports returns the local ports of the open upstream connections: the
// client_port of the worker's sessions as the server sees them.
func (p *dbProxy) ports() []int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int32
	for _, s := range p.conns {
		out = append(out, int32(s.LocalAddr().(*net.TCPAddr).Port))
	}
	return out
}

// setTarget sends new connections to addr.
func (p *dbProxy) setTarget(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = addr
}

// dsn is base (a postgres:// URL) pointed at the proxy.
func (p *dbProxy) dsn(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		t.Fatalf("the database proxy needs a postgres://host:port URL (DATABASE_URL in URL form)")
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

func (p *dbProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for c, s := range p.conns {
		c.Close()
		s.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// hostPort is the host:port of a postgres:// URL.
func hostPort(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Port() == "" {
		t.Fatalf("the database proxy needs a postgres://host:port URL (DATABASE_URL in URL form)")
	}
	return u.Host
}

// terminateWorker ends the worker's server sessions, as an operator's
// pg_terminate_backend would: those of application agencysync on this
// database that came through the proxy. It returns how many it ended.
func terminateWorker(t *testing.T, pool *pgxpool.Pool, p *dbProxy) int {
	t.Helper()
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'agencysync' AND datname = current_database() AND client_port = ANY($1)`, p.ports()).Scan(&n)
	if err != nil {
		t.Fatalf("terminate the worker's sessions: %v", err)
	}
	return n
}

// privateCluster is a PostgreSQL cluster of the test's own on a fresh data
// folder: a test that restarts or crashes the server must not disturb the
// others. The test stops the server it last started and removes the folder.
type privateCluster struct {
	*warehouse.LocalCluster
	t   *testing.T
	dir string
}

func startPrivateCluster(t *testing.T) *privateCluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "agencysync-reliability-pgdata-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &privateCluster{t: t, dir: dir}
	c.start("start a private cluster")
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

// start starts the server on the cluster's data folder (again, after a
// stop or a crash); what says what for the failure.
func (c *privateCluster) start(what string) {
	c.t.Helper()
	lc, err := warehouse.StartLocal(context.Background(), warehouse.LocalOptions{DataDir: c.dir, BinDir: os.Getenv("PG_BINDIR"), Fast: true})
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	c.LocalCluster = lc
}

// connect opens a pool of four connections on the running server,
// statements limited to a minute; the caller closes it.
func (c *privateCluster) connect() *pgxpool.Pool {
	c.t.Helper()
	pool, err := warehouse.Connect(context.Background(), c.DSN(), warehouse.PoolOptions{MaxConns: 4, StatementTimeout: time.Minute})
	if err != nil {
		c.t.Fatal(err)
	}
	return pool
}
