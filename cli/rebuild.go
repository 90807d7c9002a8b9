package cli

import (
	"context"
	"errors"

	"github.com/agencysync/agencysync/engine"
)

// runRebuild is `agencysync rebuild [--streams a,b]`: it re-derives the
// selected streams' rows from the records the warehouse stored, under the
// current AGENCY_FIELD_MAP, without a request (so without the service's
// variables), under the sync lock.
func runRebuild(ctx context.Context, a *app, args []string) error {
	fs := newFlags("rebuild", a)
	streams := fs.String("streams", "", "comma-separated streams to rebuild (default all)")
	batch := fs.Int("batch", engine.DefaultRebuildBatch, "stored records re-derived per transaction")
	noMigrate := fs.Bool("no-migrate", false, "do not apply pending migrations first")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *batch <= 0 {
		return usagef("--batch %d: want a positive number", *batch)
	}
	sel, err := parseStreams(*streams)
	if err != nil {
		return err
	}
	x, err := a.build(ctx, opening(a.cfg.AutoMigrate && !*noMigrate), false, nil)
	if err != nil {
		return err
	}
	defer x.close()
	res, err := x.eng.Rebuild(ctx, engine.RebuildRequest{Streams: sel, BatchSize: *batch})
	if err != nil {
		if errors.Is(err, engine.ErrUnknownStream) {
			return usagef("--streams: %v", err)
		}
		return err
	}
	switch res.Status {
	case engine.StatusSucceeded, engine.StatusSkipped:
		return nil
	case engine.StatusPartial:
		return &exitError{code: ExitIncomplete, err: res.Err}
	}
	return &exitError{code: ExitFailure, err: res.Err}
}
