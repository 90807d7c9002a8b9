package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/check"
	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// runCheck is `agencysync check [--json] [--streams a,b]`: the connection and
// contract test of both interfaces (package check).
func runCheck(ctx context.Context, a *app, args []string) error {
	fs := newFlags("check", a)
	asJSON := fs.Bool("json", false, "print the report as JSON (shape documented in docs/real-service.md)")
	streams := fs.String("streams", "", "comma-separated streams to check: "+strings.Join(engine.AllStreams, ",")+" (default all)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	sel, err := parseStreams(*streams)
	if err != nil {
		return err
	}
	if err := a.cfg.Require(checkNeeds(sel)); err != nil {
		return err
	}
	all, err := declarations(a.cfg)
	if err != nil {
		return err
	}
	decl := slices.DeleteFunc(slices.Clone(all), func(s *stream.Stream) bool { return !slices.Contains(sel, s.Name) })

	// The quota ledger counts every request, as in a run.
	// check creates nothing: the ledger must exist already.
	w, err := a.openFor(ctx, openReadOnly)
	if err != nil {
		return err
	}
	defer w.Close()
	ledger, clock, err := a.ledger(ctx, w)
	if err != nil {
		return err
	}
	tally := check.NewTally()
	opts := a.clientOptions(ledger, clock)
	opts.Hook, opts.MaxAttempts, opts.Streams = tally.Observe, check.PerEndpoint, all
	c, err := extract.New(opts)
	if err != nil {
		return err
	}
	day := ledger.Today()
	spent, err := ledger.Spent(ctx, day)
	if err != nil {
		return err
	}
	plan := engine.MakePlan(day, a.cfg.DailyQuota, float64(a.cfg.QuotaReserve), spent, nil, nil)
	budget := plan.Budget
	rep, err := check.Run(ctx, check.Options{
		Client: c, Tally: tally, Streams: decl, Budget: budget, Logger: a.log,
		Comms: extract.CommsQuery{DomainID: a.cfg.CommsDomainID, UserIDs: a.cfg.CommsUserIDs, BrandURL: a.cfg.CommsBrandURL, WithMessage: "0"},
		Today: clock.Now().In(a.cfg.CommsTZ.Location), Since: a.cfg.CommsStartDate.Time,
	})
	if err != nil {
		return err
	}
	// Keep the service clock's offset, as a run does: the requests were
	// counted on the service's day, and the next command reads that day.
	if off, known := clock.Offset(); known {
		if err := ledger.SaveClockOffset(ctx, off); err != nil {
			a.log.Warn("could not keep the service clock's offset", zap.Error(err))
		}
	}
	if *asJSON {
		if err := printJSON(a.env.Stdout, rep); err != nil {
			return fmt.Errorf("write check report: %w", err)
		}
	} else if err := check.WriteTable(a.env.Stdout, rep); err != nil {
		return err
	}
	return checkExit(rep, plan)
}

// checkNeeds is what the configuration must give to check the streams sel:
// the communications endpoint's settings, the main interface's, or both.
func checkNeeds(sel []string) config.Need {
	var need config.Need
	for _, s := range sel {
		if dated(s) {
			need |= config.NeedComms
		} else {
			need |= config.NeedMain
		}
	}
	return need
}

// checkExit is the error, and so the exit code, of a check's outcome: none
// when every endpoint answered as declared.
func checkExit(rep *check.Report, plan engine.Plan) error {
	switch rep.Outcome {
	case check.OutcomeOK:
		return nil
	case check.OutcomeUnauthorized:
		return &exitError{code: ExitCredential, err: rep.Err()}
	case check.OutcomeBudget:
		return &exitError{code: ExitIncomplete, err: fmt.Errorf("%w (%d of the day's %d requests spent, %d kept in reserve): endpoints were left unasked; run check again after the quota day resets",
			check.ErrBudgetSpent, plan.Spent, plan.DailyQuota, plan.Reserve)}
	case check.OutcomeMismatch:
		return &exitError{code: ExitFailure, err: fmt.Errorf("the service's records do not match the mapping: %d mapped fields missing or unreadable (see the report)", rep.Failing())}
	case check.OutcomePaging:
		return &exitError{code: ExitFailure, err: fmt.Errorf("%d lists do not page as configured: a run could not prove them complete; set AGENCY_PAGING as the report says", rep.Count(check.OutcomePaging))}
	}
	failed := fmt.Errorf("%d endpoints failed (see the report)", rep.Count(check.OutcomeFailed)+rep.Count(check.OutcomeForbidden))
	if err := rep.Err(); err != nil {
		failed = fmt.Errorf("%w: %w", failed, err)
	}
	return &exitError{code: ExitFailure, err: failed}
}
