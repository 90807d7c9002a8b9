package warehouse

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"go.uber.org/zap"

	"github.com/agencysync/agencysync/migrations"
)

// MigrateFleet makes sure the fleet's schema exists (EnsureSchema) and holds
// the job queue's tables at the version of the River library this binary
// is built with: River's own migrations (rivermigrate), applied under an
// advisory session lock, so that workers starting together apply them once. It returns the versions it applied (none when current).
func MigrateFleet(ctx context.Context, pool *pgxpool.Pool, schema string, log *zap.Logger) ([]int, error) {
	if err := EnsureSchema(ctx, pool, schema); err != nil {
		return nil, err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("migrate fleet schema %s: %w", schema, err)
	}
	var applied []int
	err = migrations.WithSessionLock(ctx, pool, lockID("fleet-migrate:"+schema), func() error {
		res, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		if err != nil {
			return err
		}
		for _, v := range res.Versions {
			applied = append(applied, v.Version)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate fleet schema %s: %w", schema, err)
	}
	if log != nil && len(applied) > 0 {
		log.Info("fleet job queue migrated", zap.String("schema", schema), zap.Ints("river_versions", applied))
	}
	return applied, nil
}
