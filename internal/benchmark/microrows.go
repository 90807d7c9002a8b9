package benchmark

import (
	"context"
	"fmt"
	"strconv"
)

// micro runs figure 7: the decode benchmarks of package extract and the
// load benchmarks of package load (against the harness's warehouse server),
// each -count=Runs, summarised by their medians.
func (h *harness) micro(ctx context.Context) []Row {
	var rows []Row
	_, res, err := GoBench(ctx, h.cfg.ModuleDir, "./extract/", "^BenchmarkDecode", h.sizes.DecodeBenchtime, h.cfg.Runs, nil)
	if err != nil {
		rows = append(rows, fail("7", "Decode micro-benchmarks (extract)", err))
	} else {
		m := BenchMedians(res)
		rows = append(rows, decodeRows(m)...)
		rows = append(rows, decodeLibraryRows(m)...)
	}
	env := []string{"DATABASE_URL=" + h.dsn, "LOAD_BENCH_EMAILS=" + strconv.Itoa(h.sizes.LoadBenchEmails)}
	_, res, err = GoBench(ctx, h.cfg.ModuleDir, "./load/", "^(BenchmarkLoadEmails|BenchmarkReloadUnchanged)$", "1x", h.cfg.Runs, env)
	if err != nil {
		rows = append(rows, fail("7", "Load micro-benchmarks (load)", err))
	} else {
		rows = append(rows, loadRows(BenchMedians(res), h.sizes.LoadBenchEmails)...)
	}
	return rows
}

// decodeRows summarises the extract decode benchmarks.
func decodeRows(m map[string]BenchSummary) []Row {
	return benchRows(m, []benchFigure{
		{"BenchmarkDecodeCommunicationsPage", "Decode: a 1000-row communications page split into records (extract.SplitPage)"},
		{"BenchmarkDecodeCommunicationsPageUniquePeople", "Decode: the same page, every participant a different person"},
		{"BenchmarkDecodeProjectsPage", "Decode: a 1000-row projects page split into records (extract.SplitPage)"},
	}, func(b benchFigure, s BenchSummary) Row {
		return Row{ID: "7", Figure: b.figure,
			Result: fmt.Sprintf("%s pages/s, %s MB/s, %s allocs/op", Float(s.Median["pages/s"], 0), Float(s.Median["MB/s"], 1),
				Float(s.Median["allocs/op"], 0)),
			Verdict: Info,
			Detail: fmt.Sprintf("%s, %d runs: pages/s %s; MB/s %s; B/op %s", b.name, s.Runs,
				List(s.Values["pages/s"], func(x float64) string { return Float(x, 0) }),
				List(s.Values["MB/s"], func(x float64) string { return Float(x, 1) }),
				List(s.Values["B/op"], func(x float64) string { return Int(int64(x)) }))}
	})
}

// benchFigure is a micro-benchmark and the figure it measures.
type benchFigure struct{ name, figure string }

// benchRows renders the row of each benchmark of benches with row, or its
// notReported row when m holds no result of it.
func benchRows(m map[string]BenchSummary, benches []benchFigure, row func(benchFigure, BenchSummary) Row) []Row {
	var rows []Row
	for _, b := range benches {
		if s, ok := m[b.name]; ok {
			rows = append(rows, row(b, s))
		} else {
			rows = append(rows, notReported(b.name, b.figure))
		}
	}
	return rows
}

// notReported is the failed row of a figure whose micro-benchmark name did
// not report.
func notReported(name, figure string) Row {
	return Row{ID: "7", Figure: figure, Result: "not measured", Verdict: Failed, Detail: name + " did not report"}
}

// loadRows summarises the load benchmarks.
func loadRows(m map[string]BenchSummary, emails int) []Row {
	rate := func(x float64) string { return Float(x, 0) }
	rows := benchRows(m, []benchFigure{
		{"BenchmarkLoadEmails/default", "Load: CommitPage ÷ raw COPY into unlogged tables, e-mails/s"},
		{"BenchmarkLoadEmails/sync_commit", "Load: the same with SyncCommit (each page waits for its WAL flush)"},
	}, func(b benchFigure, s BenchSummary) Row {
		med := s.Median["ratio"]
		return Row{ID: "7", Figure: b.figure,
			Result:  fmt.Sprintf("%s (%s vs %s e-mails/s)", Float(med, 2), rate(s.Median["normalized_emails/s"]), rate(s.Median["rawcopy_emails/s"])),
			Target:  "≥ 0.5",
			Verdict: Check(med, med >= 0.5),
			Detail: fmt.Sprintf("%s, %s e-mails, %d runs: ratio %s; CommitPage %s; raw COPY %s e-mails/s", b.name, Int(int64(emails)), s.Runs,
				List(s.Values["ratio"], func(x float64) string { return Float(x, 3) }),
				List(s.Values["normalized_emails/s"], rate), List(s.Values["rawcopy_emails/s"], rate))}
	})
	return append(rows, benchRows(m, []benchFigure{
		{"BenchmarkReloadUnchanged", "Load: reloading unchanged pages, tuples written and WAL"},
	}, func(b benchFigure, s BenchSummary) Row {
		_, maxTuples := MinMax(s.Values["reload_tuples"])
		return Row{ID: "7", Figure: b.figure,
			Result: fmt.Sprintf("%s tuples, WAL %s (%s of the first load)", Int(int64(s.Median["reload_tuples"])),
				Bytes(s.Median["reload_WAL_bytes"]), Float(s.Median["reload/first_WAL"], 3)),
			Target:  "0 tuples",
			Verdict: Check(maxTuples, maxTuples == 0),
			Detail: fmt.Sprintf("%s, %s e-mails, %d runs: first load %s tuples, %s WAL, %s e-mails/s; reload %s e-mails/s", b.name, Int(int64(emails)), s.Runs,
				Int(int64(s.Median["first_tuples"])), Bytes(s.Median["first_WAL_bytes"]), rate(s.Median["first_emails/s"]), rate(s.Median["reload_emails/s"]))}
	})...)
}

// decodeLibraryRows summarises BenchmarkDecodeLibraries:
// per page kind, the CPU milliseconds a page costs with gjson (split and
// the look-ups a declared transform makes) and with encoding/json (and the
// typed decoder while it exists), each ratio taken within a run, and
// gjson's share of a request's time budget at 10 and at 100 requests/s.
// CPU time (the process's, garbage collector included) rather than wall
// time: it does not count the time the benchmark waited for a core.
func decodeLibraryRows(m map[string]BenchSummary) []Row {
	const unit = "cpu-ms/page"
	var rows []Row
	ms := func(x float64) string { return Float(x, 2) }
	ratios := func(num, den []float64) []float64 {
		var out []float64
		for i := range min(len(num), len(den)) {
			out = append(out, num[i]/den[i])
		}
		return out
	}
	for _, kind := range []string{"communications", "projects"} {
		figure := fmt.Sprintf("Decode libraries: a 1000-row %s page split and looked up, CPU ms/page", kind)
		name := "BenchmarkDecodeLibraries/" + kind + "/"
		gj, okG := m[name+"gjson"]
		std, okS := m[name+"stdlib"]
		if !okG || !okS {
			rows = append(rows, Row{ID: "7", Figure: figure, Result: "not measured", Verdict: Failed, Detail: name + "{gjson,stdlib} did not report"})
			continue
		}
		g, s := gj.Values[unit], std.Values[unit]
		medG := Median(g)
		result := fmt.Sprintf("gjson %s ms, encoding/json %s ms (×%s)", ms(medG), ms(Median(s)), Float(Median(ratios(s, g)), 2))
		detail := fmt.Sprintf("BenchmarkDecodeLibraries, %d runs: encoding/json ÷ gjson per run %s; gjson splitting alone %s ms",
			gj.Runs, List(ratios(s, g), ms), List(m[name+"gjson-split"].Values[unit], ms))
		if typed, ok := m[name+"typed"]; ok {
			t := typed.Values[unit]
			result += fmt.Sprintf(", typed decoder %s ms (gjson ×%s)", ms(Median(t)), Float(Median(ratios(g, t)), 2))
			detail += fmt.Sprintf("; gjson ÷ typed per run %s", List(ratios(g, t), ms))
		}
		detail += fmt.Sprintf("; at 10 requests/s (100 ms a request) gjson takes %s %%, at 100 requests/s (10 ms) %s %% of a request's time",
			Float(medG, 1), Float(medG*10, 1))
		rows = append(rows, Row{ID: "7", Figure: figure, Result: result, Verdict: Info, Detail: detail})
	}
	return rows
}
