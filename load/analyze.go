package load

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// defaultAnalyzeMinRows is the fewest rows written to a table since its last
// analysis that make analyzeGrown analyse it.
const defaultAnalyzeMinRows = 1000

// analyzeGrown runs ANALYZE, after a page has committed, on each table the
// page wrote to that has grown (or changed) by at least analyzeMinRows rows
// and by at least three times as many rows as it held when last analysed:
// a table filled by a first sync is analysed at 1 000, 4 000, 16 000, …
// rows, a handful of times however large it grows (six times for a million
// e-mails; each ANALYZE reads a sample of at most 30 000 rows, a fraction
// of a second), and has statistics when the sync ends. The planner scales the row counts of
// statistics taken at a quarter of the size by the table's current pages,
// so they stay usable in between. The
// write path does not need them (its statements are planned to be fast
// without: TestStatementsPlanWithoutStatistics); analysts' queries do, and
// autovacuum may be off or late. The size at the last analysis comes from
// pg_class.reltuples, read once per table and process, then the rows this
// process wrote are counted; pg_stat_user_tables is not used, as its counters
// lag behind commits by up to seconds. A failed ANALYZE is logged and does
// not fail the page, which has committed.
func (s *Store) analyzeGrown(ctx context.Context, conn *pgxpool.Conn, c Counts) {
	if s.analyzeMinRows < 0 {
		return
	}
	for name, tc := range c.Tables {
		if n := tc.Written(); n > 0 {
			s.analyzeIfGrown(ctx, conn, name, n)
		}
	}
}

func (s *Store) analyzeIfGrown(ctx context.Context, conn *pgxpool.Conn, name string, written int64) {
	target := pgx.Identifier{s.schema, name}.Sanitize()
	s.growthMu.Lock()
	g := s.growth[name]
	if g == nil {
		g = &tableGrowth{}
		s.growth[name] = g
	}
	g.written += written
	if !g.known && !g.analysis && g.written >= s.analyzeMinRows {
		// Read the size at the last analysis once (reltuples is -1 for a
		// table never analysed nor vacuumed, 0 before PostgreSQL 14).
		g.analysis = true
		s.growthMu.Unlock()
		var tuples float64
		err := conn.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = $1::regclass", target).Scan(&tuples)
		s.growthMu.Lock()
		g.analysis = false
		if err != nil {
			s.growthMu.Unlock()
			s.log.Warn("table statistics not checked", zap.String("table", target), zap.Error(err))
			return
		}
		g.known, g.base = true, max(int64(tuples), 0)
	}
	due := g.known && !g.analysis && g.written >= max(s.analyzeMinRows, 3*g.base)
	if !due {
		s.growthMu.Unlock()
		return
	}
	g.analysis = true
	grown := g.written
	s.growthMu.Unlock()

	err := analyze(ctx, conn, target)

	s.growthMu.Lock()
	defer s.growthMu.Unlock()
	g.analysis = false
	if err != nil {
		s.log.Warn("table not analysed after a bulk load", zap.String("table", target), zap.Error(err))
		return
	}
	g.base += grown
	g.written -= grown
	s.log.Debug("table analysed after a bulk load", zap.String("table", target), zap.Int64("rows_written", grown))
}

func analyze(ctx context.Context, conn *pgxpool.Conn, target string) error {
	if _, err := conn.Exec(ctx, "ANALYZE "+target); err != nil {
		return fmt.Errorf("analyze %s: %w", target, err)
	}
	return nil
}
