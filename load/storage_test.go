package load

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agencysync/agencysync/stream"
)

// recordColumns are the columns holding an API record as received (the
// warehouse contract's raw jsonb, and the details' detail_raw): the
// declared columns of every stream that are the record, sorted.
func recordColumns() []string {
	var out []string
	for _, s := range stream.All() {
		for _, tb := range s.Tables() {
			for _, c := range tb.Columns {
				if c.Derived == stream.DerivedRecord {
					out = append(out, tb.Name+"."+c.Name)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestRawCompressedWithLZ4: after the migrations every raw and detail_raw
// column is compressed with lz4 where the server was built with it (the
// server's default otherwise), and an e-mail whose row passes PostgreSQL's
// compression threshold (about 2 kB: one with its body) is stored
// lz4-compressed.
func TestRawCompressedWithLZ4(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	lz4 := serverHasLZ4(t, pool)
	want, wantMethod := "", "pglz" // "": the server's default, pglz without lz4
	if lz4 {
		want, wantMethod = "l", "lz4"
	}
	rows, err := pool.Query(ctx, `SELECT c.relname || '.' || a.attname, a.attcompression::text
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r' AND a.attname IN ('raw', 'detail_raw') AND NOT a.attisdropped`, schema)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var col, compression string
		if err := rows.Scan(&col, &compression); err != nil {
			t.Fatal(err)
		}
		got[col] = compression
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	declared := recordColumns()
	if cols := slices.Sorted(maps.Keys(got)); !slices.Equal(cols, declared) {
		t.Errorf("raw columns %v, want %v", cols, declared)
	}
	for _, col := range declared {
		if got[col] != want {
			t.Errorf("%s: compression %q, want %q", col, got[col], want)
		}
	}

	b := newCommsGenerator().page(0)
	withBodies(t, &b, 0)
	if _, err := s.commitPage(ctx, page{stream: "communications", batch: b}); err != nil {
		t.Fatal(err)
	}
	rows, err = pool.Query(ctx, `SELECT coalesce(pg_column_compression(raw), 'none'), count(*), sum(pg_column_size(raw)), sum(octet_length(raw::text))
FROM `+qualified(schema, "emails")+` GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	type stored struct{ emails, bytes, text int64 }
	by := map[string]stored{}
	for rows.Next() {
		var method string
		var st stored
		if err := rows.Scan(&method, &st.emails, &st.bytes, &st.text); err != nil {
			t.Fatal(err)
		}
		by[method] = st
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for method, st := range by {
		if method != wantMethod && method != "none" {
			t.Errorf("%d e-mails' raw compressed with %s, want %s", st.emails, method, wantMethod)
		}
	}
	compressed := by[wantMethod]
	if compressed.emails == 0 || compressed.bytes >= compressed.text {
		t.Errorf("e-mails with bodies: %d raw compressed with %s (%d bytes stored for %d of text); by method %+v",
			compressed.emails, wantMethod, compressed.bytes, compressed.text, by)
	}
}

// TestUpdatedRawKeepsTheColumnsCompression: a row that changes goes
// through the staging table; a value the staging table compressed would be
// copied into the target as it is, with the server's default method. The
// updated e-mails' raw must be compressed with the target column's method.
func TestUpdatedRawKeepsTheColumnsCompression(t *testing.T) {
	t.Parallel()
	s, pool, schema := newStore(t)
	ctx := context.Background()
	lz4 := serverHasLZ4(t, pool)
	if !lz4 {
		t.Skip("this server has no lz4: every method is the server's default")
	}
	gen := newCommsGenerator()
	plain := gen.page(0)
	if _, err := s.commitPage(ctx, page{stream: "communications", batch: plain}); err != nil {
		t.Fatal(err)
	}
	bodies := gen.page(0)
	withBodies(t, &bodies, 0)
	if _, err := s.commitPage(ctx, page{stream: "communications", batch: bodies}); err != nil {
		t.Fatal(err)
	}
	var pglz, lz, none int
	if err := pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_column_compression(raw) = 'pglz'),
  count(*) FILTER (WHERE pg_column_compression(raw) = 'lz4'), count(*) FILTER (WHERE pg_column_compression(raw) IS NULL)
FROM `+qualified(schema, "emails")).Scan(&pglz, &lz, &none); err != nil {
		t.Fatal(err)
	}
	if pglz != 0 || lz == 0 {
		t.Errorf("updated e-mails' raw: %d pglz, %d lz4, %d uncompressed; want every compressed one lz4", pglz, lz, none)
	}
}

// serverHasLZ4 says whether the server was built with lz4.
func serverHasLZ4(t *testing.T, pool *pgxpool.Pool) bool {
	t.Helper()
	var lz4 bool
	if err := pool.QueryRow(context.Background(), `SELECT 'lz4' = ANY (enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&lz4); err != nil {
		t.Fatal(err)
	}
	return lz4
}
