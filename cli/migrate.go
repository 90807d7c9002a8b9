package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/agencysync/agencysync/warehouse"
)

// downRefusal is `migrate down` without --yes: it names what would be rolled
// back and dropped, changes nothing, and exits 2.
func downRefusal(ctx context.Context, m *warehouse.Migrator, schema string) error {
	p, err := m.DownPreview(ctx)
	if err != nil {
		return err
	}
	if p.File == "" {
		return usagef("schema %s has no migration applied: nothing to roll back", schema)
	}
	drops := "nothing it names"
	if len(p.Drops) > 0 {
		drops = strings.Join(p.Drops, ", ")
	}
	return usagef("would roll back %s in schema %s, dropping %s (and the data in it); run `agencysync migrate down --yes` to do it",
		p.File, schema, drops)
}

// requireMigrated checks that the schema has every migration of the
// binary; an error wrapping warehouse.ErrMigrationsPending (exit 2) names
// `agencysync migrate up`, and for the commands that migrate on their own
// (mode openRequire: run, serve, backfill, verify, rebuild with migrations
// turned off) SYNC_AUTO_MIGRATE too.
func requireMigrated(ctx context.Context, w *warehouse.Warehouse, mode openMode) error {
	r, err := warehouse.NewReadiness(w.Pool, w.Schema)
	if err != nil {
		return err
	}
	if err := r.Check(ctx); err != nil {
		if mode == openReadOnly {
			return fmt.Errorf("%w; this command creates nothing: run `agencysync migrate up` first", err)
		}
		return fmt.Errorf("%w; run `agencysync migrate up` (or leave SYNC_AUTO_MIGRATE=true)", err)
	}
	return nil
}
