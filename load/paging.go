package load

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PagingFact is one row of paging_state: what the service was seen doing
// when one list endpoint was paged one way (its key names the endpoint,
// the paging style and the parameter names).
type PagingFact struct {
	// Honoured is the largest page size the service answered in full as
	// asked.
	Honoured int
	// NamesNext: the service names a next page when more rows follow.
	NamesNext bool
}

// PagingFacts reads paging_state by key.
func (s *Store) PagingFacts(ctx context.Context) (map[string]PagingFact, error) {
	rows, err := s.pool.Query(ctx, fmt.Sprintf(`SELECT paging_key, honoured, names_next FROM %s`,
		pgx.Identifier{s.schema, "paging_state"}.Sanitize()))
	if err != nil {
		return nil, fmt.Errorf("read paging state: %w", err)
	}
	out := map[string]PagingFact{}
	for rows.Next() {
		var k string
		var f PagingFact
		if err := rows.Scan(&k, &f.Honoured, &f.NamesNext); err != nil {
			return nil, fmt.Errorf("read paging state: %w", err)
		}
		out[k] = f
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read paging state: %w", err)
	}
	return out, nil
}

// SavePagingFacts stores facts by key (replacing what was stored); none
// is a no-op.
func (s *Store) SavePagingFacts(ctx context.Context, facts map[string]PagingFact) error {
	if len(facts) == 0 {
		return nil
	}
	var keys []string
	var honoured []int32
	var next []bool
	for k, f := range facts {
		keys, honoured, next = append(keys, k), append(honoured, int32(f.Honoured)), append(next, f.NamesNext)
	}
	q := fmt.Sprintf(`INSERT INTO %s AS p (paging_key, honoured, names_next)
SELECT * FROM unnest($1::text[], $2::integer[], $3::boolean[])
ON CONFLICT (paging_key) DO UPDATE SET honoured = EXCLUDED.honoured, names_next = EXCLUDED.names_next, _synced_at = now()
WHERE (p.honoured, p.names_next) IS DISTINCT FROM (EXCLUDED.honoured, EXCLUDED.names_next)`,
		pgx.Identifier{s.schema, "paging_state"}.Sanitize())
	if _, err := s.pool.Exec(ctx, q, keys, honoured, next); err != nil {
		return fmt.Errorf("save paging state: %w", err)
	}
	return nil
}
