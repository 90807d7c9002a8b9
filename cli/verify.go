package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
)

// runVerify reconciles the warehouse's communications with the service:
// verify [--from D] [--to D] (default the whole history, from
// AGENCY_COMMS_START_DATE to today). Exit 0 when it proved equality (after
// repairs), 75 when the budget ran out or a difference could not be
// repaired in this run, 1 on failure.
func runVerify(ctx context.Context, a *app, args []string) error {
	fs := newFlags("verify", a)
	from := fs.String("from", "", "first day to verify, YYYY-MM-DD (default AGENCY_COMMS_START_DATE)")
	to := fs.String("to", "", "last day to verify, YYYY-MM-DD (default today in AGENCY_COMMS_TZ)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	noMigrate := fs.Bool("no-migrate", false, "do not apply pending migrations first")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	var rg engine.Range
	var err error
	if *from != "" {
		if rg.From, err = parseDay("--from", *from); err != nil {
			return err
		}
	}
	if *to != "" {
		if rg.To, err = parseDay("--to", *to); err != nil {
			return err
		}
	}
	if !rg.From.IsZero() && !rg.To.IsZero() && rg.To.Before(rg.From) {
		return usagef("--to %s is before --from %s", *to, *from)
	}
	if rg.From.IsZero() && a.cfg.CommsStartDate.IsZero() {
		return usagef("verify needs --from or AGENCY_COMMS_START_DATE")
	}
	// Only the communications endpoint is reconciled; the main interface's
	// address tells the service's clock (the quota day), and an open end of
	// the range is filled from the e-mails' history.
	need := config.NeedBaseURL | config.NeedComms
	if rg.From.IsZero() || rg.To.IsZero() {
		need |= config.NeedStartDate
	}
	if err := a.cfg.Require(need); err != nil {
		return err
	}
	x, err := a.wire(ctx, a.cfg.AutoMigrate && !*noMigrate, a.progress(10*time.Second))
	if err != nil {
		return err
	}
	defer x.close()
	res, err := x.eng.Run(ctx, engine.Request{Trigger: engine.TriggerVerify, Mail: engine.MailRequest{Verify: &rg}})
	if err != nil {
		return err
	}
	if *asJSON {
		if err := printJSON(a.env.Stdout, struct {
			RunID  string               `json:"run_id"`
			Status engine.Status        `json:"status"`
			Report *engine.VerifyReport `json:"report"`
		}{res.RunID, res.Status, res.Verify}); err != nil {
			return fmt.Errorf("print verify report: %w", err)
		}
	} else {
		printVerify(a.env.Stdout, res)
	}
	return exitFor(res, a.cfg.FailOn)
}

// printVerify writes what a verification found and filled.
func printVerify(w io.Writer, res *engine.Result) {
	if res.Status == engine.StatusSkipped {
		fmt.Fprintln(w, "another sync holds the lock of this warehouse schema; nothing verified")
		return
	}
	v := res.Verify
	if v == nil {
		fmt.Fprintf(w, "nothing verified (%s)\n", res.Status)
		return
	}
	fmt.Fprintf(w, "communications %s\n", v.Summary())
	for _, d := range v.Days {
		state := "repaired"
		if !d.Resolved {
			state = "NOT repaired: " + d.Reason
		}
		fmt.Fprintf(w, "  %s  service %d, warehouse %d → %d; %d filled, %d soft-deleted, %d rejected, %d page(s); %s\n",
			d.Day, d.Service, d.WarehouseBefore, d.WarehouseAfter, d.Filled, d.SoftDeleted, d.Rejected, d.Pages, state)
	}
	fmt.Fprintf(w, "run %s: %s\n", res.RunID, res.Status)
}
