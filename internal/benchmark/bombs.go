package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
)

// bombSetting is one in-flight setting of figure 11: the worker's
// SYNC_MAX_IN_FLIGHT ("" for its default, derived from the pace).
type bombSetting struct {
	name, inFlight string
}

var bombSettings = []bombSetting{{"default in-flight", ""}, {"SYNC_MAX_IN_FLIGHT=4", "4"}}

// bombRun is one first sync of figure 11.
type bombRun struct {
	rssKiB int64
	code   int
	rows   map[string]int64 // sync_runs.rows_by_table
	named  bool             // the log names the cap's setting
}

// bombs runs figure 11: the worker's peak RSS of a first sync that meets a
// gzip bomb on every communications page after each range's first (the
// sandbox's gzip_bomb twist, 1 GiB inflated, from page 2 on, so that pages
// fetched ahead meet several at once), divided by the same sync's without
// bombs, at the default requests in flight and at SYNC_MAX_IN_FLIGHT=4,
// pair by pair. The bombed sync must exit 1 naming AGENCY_MAX_RESPONSE_BYTES
// and write every table but the communications ones as the normal sync does.
func (h *harness) bombs(ctx context.Context) []Row {
	agency := h.sizes.agency(h.sizes.BackfillSmall)
	figure := func(s bombSetting) string {
		return fmt.Sprintf("Memory under gzip bombs (%s): worker peak RSS, first sync of %s with a bomb on every communications page ÷ without", s.name, describe(agency))
	}
	fail10 := func(err error) []Row {
		var rows []Row
		for _, s := range bombSettings {
			rows = append(rows, fail("11", figure(s), err))
		}
		return rows
	}
	sb, err := startSandbox(ctx, h.sandboxBin, agency)
	if err != nil {
		return fail10(err)
	}
	defer sb.Stop()
	runs := make([][2][]bombRun, len(bombSettings)) // per setting: normal, bombed
	for run := range h.cfg.Runs {
		for i, s := range bombSettings {
			for k, bombed := range []bool{false, true} {
				r, err := h.bombOnce(ctx, sb, s, bombed)
				if err != nil {
					return fail10(err)
				}
				h.log("%s, bombs %v, run %d/%d: exit %d, peak RSS %s", s.name, bombed, run+1, h.cfg.Runs, r.code, Bytes(float64(r.rssKiB)*1024))
				runs[i][k] = append(runs[i][k], r)
			}
		}
	}
	var rows []Row
	for i, s := range bombSettings {
		rows = append(rows, bombRow(figure(s), runs[i][0], runs[i][1]))
	}
	return rows
}

// bombOnce is one first sync on a fresh schema, with or without bombs.
func (h *harness) bombOnce(ctx context.Context, sb *Sandbox, s bombSetting, bombed bool) (bombRun, error) {
	twists := map[string]any{"gzip_bomb": bombed, "oversize_from_page": 2}
	if err := sb.Admin(ctx, http.MethodPost, "twists", twists, nil); err != nil {
		return bombRun{}, err
	}
	schema := newSchema()
	defer h.dropSchema(schema)
	env := sb.WorkerEnv(h.dsn, schema)
	env["AGENCY_RATE_LIMIT"] = "1000"
	if s.inFlight != "" {
		env["SYNC_MAX_IN_FLIGHT"] = s.inFlight
	}
	label := "bombs-normal"
	if bombed {
		label = "bombs"
	}
	res, err := h.runWorker(ctx, label, env, "run")
	if err != nil {
		return bombRun{}, err
	}
	if !bombed {
		if err := res.Err("first sync without bombs"); err != nil {
			return bombRun{}, err
		}
	}
	var raw []byte
	if err := h.pool.QueryRow(ctx, "SELECT rows_by_table FROM "+pgx.Identifier{schema, "sync_runs"}.Sanitize()+" ORDER BY started_at DESC LIMIT 1").Scan(&raw); err != nil {
		return bombRun{}, fmt.Errorf("read sync_runs: %w", err)
	}
	r := bombRun{rssKiB: res.MaxRSSKiB, code: res.Code, named: strings.Contains(string(res.Stderr), "AGENCY_MAX_RESPONSE_BYTES")}
	if err := json.Unmarshal(raw, &r.rows); err != nil {
		return bombRun{}, fmt.Errorf("decode rows_by_table: %w", err)
	}
	return r, nil
}

// commsTables are the tables only the communications stream writes.
var commsTables = []string{"emails", "email_recipients", "users"}

// otherRows is rows_by_table without the communications tables.
func otherRows(rows map[string]int64) map[string]int64 {
	out := maps.Clone(rows)
	for _, t := range commsTables {
		delete(out, t)
	}
	return out
}

func bombRow(figure string, normal, bombed []bombRun) Row {
	mb := func(r bombRun) float64 { return float64(r.rssKiB) * 1024 / 1e6 }
	n, b := float64s(normal, mb), float64s(bombed, mb)
	ratios := PairRatios(b, n)
	ratio := Median(ratios)
	_, bmax := MinMax(b)
	ok := len(ratios) > 0
	var problems []string
	for i, r := range bombed {
		if r.code != 1 || !r.named {
			problems = append(problems, fmt.Sprintf("run %d: exit %d, cap's setting named %v", i+1, r.code, r.named))
		}
		if got, want := otherRows(r.rows), otherRows(normal[i].rows); !maps.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("run %d: other streams wrote %v, without bombs %v", i+1, got, want))
		}
	}
	detail := fmt.Sprintf("peak RSS (getrusage ru_maxrss) per run with bombs %s MB, without %s MB; ratio per run %s; largest with bombs %s MB (the shipped Kubernetes limit is 512 MiB); each bombed run exits 1 naming AGENCY_MAX_RESPONSE_BYTES and writes the other streams' tables as the run without: %v",
		List(b, func(x float64) string { return Float(x, 1) }), List(n, func(x float64) string { return Float(x, 1) }),
		List(ratios, func(x float64) string { return Float(x, 2) }), Float(bmax, 1), len(problems) == 0)
	if len(problems) > 0 {
		detail += " (" + strings.Join(problems, "; ") + ")"
	}
	return Row{ID: "11", Figure: figure,
		Result:  fmt.Sprintf("×%s (%s MB vs %s MB)", Float(ratio, 2), Float(Median(b), 1), Float(Median(n), 1)),
		Target:  "≤ 2×, exit 1, other streams land",
		Verdict: Check(ratio, ok && ratio <= 2 && len(problems) == 0),
		Detail:  detail}
}
