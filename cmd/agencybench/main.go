// Command agencybench measures agencysync's performance figures with the real
// binaries, the sandbox and PostgreSQL, prints one table and writes it to
// BENCHMARKS.md. `make bench` and `make bench-quick` run it; see package
// benchmark.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/agencysync/agencysync/internal/benchmark"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("agencybench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "smaller sizes (make bench-quick): the same table in a few minutes")
	runs := fs.Int("runs", 3, "runs of each scenario (at least 3); figures are their medians")
	out := fs.String("out", "BENCHMARKS.md", "Markdown file to write the report to (empty: print only)")
	bin := fs.String("bin", "", "folder with prebuilt agencysync and agencysandbox (default: build them)")
	figures := fs.String("figures", "", "comma-separated figure numbers 1-11 to measure (default all)")
	days := fs.Int("days", 0, "simulated days of figure 8's large agency (default 14, with --quick 3)")
	logDir := fs.String("logs", "", "keep every agencysync process's log in this folder (diagnosis)")
	logLevel := fs.String("worker-log-level", "", "LOG_LEVEL of the agencysync processes (default info; debug logs every request)")
	save := fs.String("save", "", "also write the report as JSON to this file (for a later --keep)")
	keep := fs.String("keep", "", "a report saved with --save whose rows complete this session's (the figures not measured now)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *days < 0 {
		fmt.Fprintln(os.Stderr, "agencybench: --days must not be negative")
		return 2
	}
	cfg := benchmark.Config{Quick: *quick, Runs: *runs, BinDir: *bin, DatabaseURL: os.Getenv("DATABASE_URL"), PGBinDir: os.Getenv("PG_BINDIR"), Log: os.Stderr,
		LogDir: *logDir, WorkerLogLevel: *logLevel, LargeDays: *days}
	if *figures != "" {
		cfg.Figures = strings.Split(*figures, ",")
	}
	rep, err := benchmark.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agencybench:", err)
		return 1
	}
	if *save != "" {
		if err := saveReport(*save, rep); err != nil {
			fmt.Fprintln(os.Stderr, "agencybench:", err)
			return 1
		}
	}
	if *keep != "" {
		f, err := os.Open(*keep)
		if err != nil {
			fmt.Fprintln(os.Stderr, "agencybench: open earlier report:", err)
			return 1
		}
		earlier, err := benchmark.LoadReport(f)
		f.Close()
		if err != nil {
			fmt.Fprintln(os.Stderr, "agencybench:", err)
			return 1
		}
		rep.MergeEarlier(earlier)
	}
	fmt.Println(benchmark.Table(rep.Rows))
	fmt.Printf("took %s; load average %s at the start, %s at the end; other processes used %s cores on average\n",
		rep.Took.Round(1e9), rep.Machine.LoadStart, rep.Machine.LoadEnd, benchmark.Float(rep.OtherCores, 2))
	if *out != "" {
		md := rep.Markdown()
		if old, err := os.ReadFile(*out); err == nil { // sections measured by other means stay
			md = benchmark.KeepSeparateSections(string(old), md)
		}
		if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "agencybench: write report:", err)
			return 1
		}
		fmt.Println("written to", *out)
	}
	if missed := rep.Missed(); len(missed) > 0 {
		fmt.Printf("%d figure(s) missed their target or could not be measured\n", len(missed))
	}
	return 0
}

// saveReport writes rep as JSON to path.
func saveReport(path string, rep *benchmark.Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create report file: %w", err)
	}
	if err := rep.Save(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close report file: %w", err)
	}
	return nil
}
