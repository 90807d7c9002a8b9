package benchmark

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/stat (100 on Linux).
const clockTick = 100

// CPUSample is the machine's busy CPU time and this benchmark's own at one
// moment: this process and its reaped children (workers, sandboxes, go
// build and go test with their test binaries), plus the running private
// cluster's processes when pgRoot (its postmaster) is given.
type CPUSample struct {
	System, Own time.Duration
	At          time.Time
}

// SampleCPU reads /proc/stat, getrusage and, when pgRoot > 0, the CPU time
// of the process tree of the postmaster pgRoot.
func SampleCPU(pgRoot int) (CPUSample, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUSample{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	busy, err := parseProcStatBusy(b)
	if err != nil {
		return CPUSample{}, err
	}
	var self, children syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return CPUSample{}, fmt.Errorf("read own CPU time: %w", err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children); err != nil {
		return CPUSample{}, fmt.Errorf("read children's CPU time: %w", err)
	}
	own := time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
	if pgRoot > 0 {
		own += treeCPU(pgRoot)
	}
	return CPUSample{System: busy, Own: own, At: time.Now()}, nil
}

// procStat is what /proc/<pid>/stat says of a process's CPU time.
type procStat struct {
	ppid     int
	own      time.Duration // utime + stime
	children time.Duration // cutime + cstime: its reaped children
}

// parseProcPidStat reads /proc/<pid>/stat; the command name, in
// parentheses, may hold spaces and parentheses itself.
func parseProcPidStat(b []byte) (procStat, error) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, errors.New("parse process stat: no command name")
	}
	f := strings.Fields(s[i+1:]) // from field 3 (state) on
	if len(f) < 15 {
		return procStat{}, errors.New("parse process stat: too few fields")
	}
	var n [5]int64
	for k, idx := range []int{1, 11, 12, 13, 14} { // ppid, utime, stime, cutime, cstime
		v, err := strconv.ParseInt(f[idx], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("parse process stat: %w", err)
		}
		n[k] = v
	}
	tick := func(v int64) time.Duration { return time.Duration(v) * time.Second / clockTick }
	return procStat{ppid: int(n[0]), own: tick(n[1] + n[2]), children: tick(n[3] + n[4])}, nil
}

// treeCPU is the CPU time of process root, of its reaped children and of
// its live children (and theirs): a postmaster and its backends. A child
// reaped during the scan would be counted twice or not at all, so the scan
// is repeated until the root's reaped children did not change meanwhile.
func treeCPU(root int) time.Duration {
	read := func(pid string) (procStat, bool) {
		b, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return procStat{}, false
		}
		st, err := parseProcPidStat(b)
		return st, err == nil
	}
	var total time.Duration
	for range 5 {
		before, ok := read(strconv.Itoa(root))
		if !ok {
			return 0
		}
		total = 0
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			if st, ok := read(e.Name()); ok && st.ppid == root {
				total += st.own + st.children
			}
		}
		after, ok := read(strconv.Itoa(root))
		if !ok {
			return 0
		}
		total += after.own + after.children
		if after.children == before.children {
			break
		}
	}
	return total
}

// OtherCores is how many cores other processes kept busy on average between
// two samples: the machine's busy CPU time minus this process tree's, over
// the wall time.
func OtherCores(from, to CPUSample) float64 {
	wall := to.At.Sub(from.At)
	if wall <= 0 {
		return 0
	}
	other := (to.System - from.System) - (to.Own - from.Own)
	return max(0, other.Seconds()/wall.Seconds())
}

// parseProcStatBusy returns the busy time of the "cpu" line of /proc/stat:
// user, nice, system, irq, softirq and steal (idle and iowait are not busy;
// guest time is already in user).
func parseProcStatBusy(b []byte) (time.Duration, error) {
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, errors.New("parse /proc/stat: no cpu line")
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}

// pgCPU is the private cluster's CPU time so far (0 without one).
func (h *harness) pgCPU() time.Duration {
	if h.pgRoot <= 0 {
		return 0
	}
	return treeCPU(h.pgRoot)
}

// threadCPU is this process's CPU time so far (all its threads: the raw
// copy's row encoding, pgx, the garbage collector).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
