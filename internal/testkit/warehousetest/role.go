package warehousetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// SchemaOwner is a login role that owns one fresh schema and holds no other
// right than what PUBLIC has on the test database (CONNECT, TEMPORARY; never
// CREATE on the database): the least-privileged deployment of agencysync.
type SchemaOwner struct {
	// Role is the role's name.
	Role string
	// Schema is the schema the role owns (created empty, not migrated).
	Schema string
	// DSN connects to the test database as Role (no password: the test
	// clusters trust loopback connections).
	DSN string
}

// NewSchemaOwner creates a login role and an empty schema it owns, checks
// that the role has no CREATE on the database, and drops both (and whatever
// the role still owns) when the test ends. The role is created through the
// harness's own (superuser) connection, on the shared database or the private
// cluster alike.
func NewSchemaOwner(t testing.TB) SchemaOwner {
	t.Helper()
	role, dsn := NewRole(t)
	ctx := context.Background()
	schema := newSchemaName(t)
	_, err := Pool(t).Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()+" AUTHORIZATION "+pgx.Identifier{role}.Sanitize())
	if err != nil {
		t.Fatalf("warehousetest: create schema for %s: %v", role, err)
	}
	return SchemaOwner{Role: role, Schema: schema, DSN: dsn}
}

// NewRole creates a login role with no right beyond PUBLIC's (it fails the
// test if PUBLIC has CREATE on the test database) and returns its name and a
// DSN connecting as it. The role, what it owns and its grants are dropped
// when the test ends, after the schemas named by NewSchemaName later on.
func NewRole(t testing.TB) (role, dsn string) {
	t.Helper()
	p := Pool(t)
	ctx := context.Background()
	var b [6]byte
	_, _ = rand.Read(b[:])
	role = "agencysync_lp_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{role}.Sanitize()
	if _, err := p.Exec(ctx, "CREATE ROLE "+ident+" LOGIN"); err != nil {
		t.Fatalf("warehousetest: create role: %v", err)
	}
	// Registered before any later schema's cleanup, so it runs after it.
	t.Cleanup(func() {
		// dropRole ends the role's sessions first: one still open would
		// keep the role (and its temp tables) alive.
		if err := dropRole(p, role); err != nil {
			t.Errorf("warehousetest: %v", err)
		}
	})
	var canCreate bool
	if err := p.QueryRow(ctx, "SELECT has_database_privilege($1, current_database(), 'CREATE')", role).Scan(&canCreate); err != nil {
		t.Fatalf("warehousetest: check rights of %s: %v", role, err)
	}
	if canCreate {
		t.Fatalf("warehousetest: role %s has CREATE on the test database (granted to PUBLIC?); the least-privilege tests need a database where it does not", role)
	}
	dsn, err := WithUser(DSN(t), role)
	if err != nil {
		t.Fatalf("warehousetest: %v", err)
	}
	return role, dsn
}

// WithUser returns dsn (a postgres:// URL or a keyword/value string) with its
// user replaced by user and any password removed.
func WithUser(dsn, user string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse database url: malformed")
		}
		u.User = url.User(user)
		q := u.Query()
		q.Del("user")
		q.Del("password")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	var kept []string
	for f := range strings.FieldsSeq(dsn) {
		if !strings.HasPrefix(f, "user=") && !strings.HasPrefix(f, "password=") {
			kept = append(kept, f)
		}
	}
	return strings.Join(append(kept, "user="+user), " "), nil
}
