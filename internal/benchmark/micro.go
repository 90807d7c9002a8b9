package benchmark

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// BenchResult is one line of `go test -bench` output: a benchmark's name
// (without the -GOMAXPROCS suffix), its iterations and its metrics by unit
// (ns/op, MB/s, B/op, allocs/op and custom units such as pages/s).
type BenchResult struct {
	Name       string
	Iterations int64
	Metrics    map[string]float64
}

var procsSuffix = regexp.MustCompile(`-\d+$`)

// ParseBenchOutput reads the result lines of `go test -bench` output; other
// lines (goos, pkg, PASS, logs) are skipped. With -count=n a benchmark has n
// results, in order.
func ParseBenchOutput(out []byte) []BenchResult {
	var res []BenchResult
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		r := BenchResult{Name: procsSuffix.ReplaceAllString(f[0], ""), Iterations: n, Metrics: map[string]float64{}}
		ok := true
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				ok = false
				break
			}
			r.Metrics[f[i+1]] = v
		}
		if ok {
			res = append(res, r)
		}
	}
	return res
}

// BenchMedians groups results by benchmark name and returns, per name, the
// median of each metric over its runs, and the number of runs.
func BenchMedians(results []BenchResult) map[string]BenchSummary {
	vals := map[string]map[string][]float64{}
	runs := map[string]int{}
	for _, r := range results {
		if vals[r.Name] == nil {
			vals[r.Name] = map[string][]float64{}
		}
		runs[r.Name]++
		for unit, v := range r.Metrics {
			vals[r.Name][unit] = append(vals[r.Name][unit], v)
		}
	}
	out := map[string]BenchSummary{}
	for name, units := range vals {
		s := BenchSummary{Runs: runs[name], Median: map[string]float64{}, Values: units}
		for unit, v := range units {
			s.Median[unit] = Median(v)
		}
		out[name] = s
	}
	return out
}

// BenchSummary is a benchmark's metrics over its runs.
type BenchSummary struct {
	Runs   int
	Median map[string]float64
	Values map[string][]float64 // each run's value, in order
}

// GoBench runs `go test -run '^$' -bench pattern -benchtime benchtime
// -count count pkg` in dir with env added to the process's environment, and
// returns the raw output and its parsed results.
func GoBench(ctx context.Context, dir, pkg, pattern, benchtime string, count int, env []string) ([]byte, []BenchResult, error) {
	args := []string{"test", "-run", "^$", "-bench", pattern, "-benchtime", benchtime,
		"-count", strconv.Itoa(count), "-timeout", "20m", pkg}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, nil, fmt.Errorf("run go test -bench %s %s: %w: %s", pattern, pkg, err, lastLines(out, 15))
	}
	return out, ParseBenchOutput(out), nil
}

// lastLines returns the last n lines of b, joined with " | ".
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
