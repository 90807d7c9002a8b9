package benchmark

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Machine describes where the figures were measured.
type Machine struct {
	CPU         string // CPU model name
	Cores       int    // logical CPUs
	MemoryBytes int64  // physical memory
	Kernel      string
	GoVersion   string
	Postgres    string // server_version of the warehouse's server
	PostgresCfg string // settings that change write speed: fsync, synchronous_commit, full_page_writes, shared_buffers
	Warehouse   string // "private cluster" or "DATABASE_URL"
	LoadStart   string // /proc/loadavg's three averages when the run started
	LoadEnd     string // and when it ended
	Date        time.Time
	Commit      string // git describe --always --dirty of the measured tree, if known
}

// DescribeMachine reads the CPU, memory, kernel and load average from /proc,
// the Go version from `go version` and the PostgreSQL version and settings
// from the server behind pool.
func DescribeMachine(ctx context.Context, pool *pgxpool.Pool) Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Date: time.Now().UTC(), LoadStart: LoadAverage()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = parseCPUModel(b)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemoryBytes = parseMemTotal(b)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.CommandContext(ctx, "go", "version").Output(); err == nil {
		m.GoVersion = strings.TrimPrefix(strings.TrimSpace(string(out)), "go version ")
	}
	if pool != nil {
		var v, fsync, sc, fpw, sb string
		if err := pool.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
current_setting('synchronous_commit'), current_setting('full_page_writes'), current_setting('shared_buffers')`).
			Scan(&v, &fsync, &sc, &fpw, &sb); err == nil {
			m.Postgres = v
			m.PostgresCfg = fmt.Sprintf("fsync=%s, synchronous_commit=%s, full_page_writes=%s, shared_buffers=%s", fsync, sc, fpw, sb)
		}
	}
	return m
}

// LoadAverage returns the 1-, 5- and 15-minute load averages of
// /proc/loadavg ("2.10 1.85 1.40"), or "unknown".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return parseLoadAvg(b)
}

func parseLoadAvg(b []byte) string {
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func parseCPUModel(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "unknown"
}

func parseMemTotal(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return kib * 1024
			}
		}
	}
	return 0
}

// Markdown renders the description as a bullet list.
func (m Machine) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- date: %s\n", m.Date.Format("2006-01-02 15:04 MST"))
	if m.Commit != "" {
		fmt.Fprintf(&b, "- source: %s\n", m.Commit)
	}
	fmt.Fprintf(&b, "- CPU: %s, %d logical cores\n", m.CPU, m.Cores)
	fmt.Fprintf(&b, "- memory: %s\n", Bytes(float64(m.MemoryBytes)))
	if m.Kernel != "" {
		fmt.Fprintf(&b, "- OS: %s\n", m.Kernel)
	}
	fmt.Fprintf(&b, "- Go: %s\n", m.GoVersion)
	fmt.Fprintf(&b, "- PostgreSQL: %s (%s; %s)\n", m.Postgres, m.Warehouse, m.PostgresCfg)
	fmt.Fprintf(&b, "- load average (1, 5, 15 min): %s at the start, %s at the end\n", m.LoadStart, m.LoadEnd)
	return b.String()
}
