package load

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlLike matches string literals that hold SQL text: statements, their
// characteristic clauses, server functions and session settings. Prose that
// merely names a keyword ("select the streams") does not match.
var sqlLike = []*regexp.Regexp{
	regexp.MustCompile(`(?is)\bselect\b.+\bfrom\b`),
	regexp.MustCompile(`(?i)^\s*select\s+(\$|\d|count\(|coalesce\(|current_|now\(|bool_or\(|array_agg\(|pg_)`),
	regexp.MustCompile(`(?i)\binsert\s+into\b`),
	regexp.MustCompile(`(?i)\bupdate\s+[%\w."]+\s+(as\s+\w+\s+)?set\b`),
	regexp.MustCompile(`(?i)\bdelete\s+from\b`),
	regexp.MustCompile(`\b(CREATE|ALTER|DROP)\s+(UNLOGGED\s+)?(TABLE|SCHEMA|INDEX|VIEW|MATERIALIZED|EXTENSION|ROLE|FUNCTION|TRIGGER|SEQUENCE|TYPE|SYSTEM)\b`),
	regexp.MustCompile(`(?i)\bcreate\s+\w+\s+if\s+not\s+exists\b`),
	regexp.MustCompile(`(?i)\bgrant\s+[\w, ]+\s+on\b`),
	regexp.MustCompile(`(?i)\bon\s+conflict\b`),
	regexp.MustCompile(`(?i)\bset\s+local\b`),
	regexp.MustCompile(`(?i)\bpg_[a-z_]+\(`),
	regexp.MustCompile(`(?i)\$\d+::`),
	regexp.MustCompile(`(?i)\bis\s+(not\s+)?null\b`),
	regexp.MustCompile(`(?i)^\s*\w+\s*=\s*'[^']*'\s*$`), // a WHERE fragment: level = 'project'
	regexp.MustCompile(`(?i)search_path\s*=|^search_path$`),
}

// notProduct are folders whose SQL is not the product's: the test kit and
// the benchmark harness.
var notProduct = []string{"internal/testkit", "internal/benchmark", "cmd/agencybench"}

// sqlOwners are the packages allowed to hold SQL text.
var sqlOwners = []string{"load", "migrations"}

// TestNoSQLOutsideLoad checks that no SQL text is outside load and
// migrations (tests aside): every string literal of every
// non-test Go file of the module, outside load and migrations, is scanned
// for SQL.
func TestNoSQLOutsideLoad(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from load/: %v", err)
	}
	fset := token.NewFileSet()
	scanned := 0
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			for _, skip := range append(append([]string{}, sqlOwners...), notProduct...) {
				if rel == skip || strings.HasPrefix(rel, skip+"/") {
					return filepath.SkipDir
				}
			}
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		scanned++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, re := range sqlLike {
				if re.MatchString(s) {
					found = append(found, fset.Position(lit.Pos()).String()+": "+sqlExcerpt(s))
					break
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 50 {
		t.Fatalf("scanned only %d files: the walk missed the module", scanned)
	}
	for _, f := range found {
		t.Errorf("SQL text outside load and migrations: %s", strings.TrimPrefix(f, root+"/"))
	}
}

func sqlExcerpt(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return s
}

// TestSQLDetectorCatches keeps the detector honest: it flags the shapes of
// SQL the product wrote outside load, and leaves alone the prose around them.
func TestSQLDetectorCatches(t *testing.T) {
	for _, c := range []struct {
		text string
		sql  bool
	}{
		{"SELECT pg_try_advisory_lock($1)", true},
		{"SELECT count(*) FROM ", true},
		{" WHERE _deleted_at IS NULL", true},
		{"UPDATE %s AS d SET listed = false", true},
		{"DELETE FROM %s WHERE stream = $1", true},
		{"CREATE SCHEMA IF NOT EXISTS ", true},
		{"GRANT USAGE, CREATE ON SCHEMA %s TO %s", true},
		{"level = 'project'", true},
		{" -csearch_path=", true},
		{"search_path", true},
		{"SELECT coalesce(array_agg(v ORDER BY v), '{}') FROM unnest($1::bigint[]) AS v", true},
		{"select the streams to sync", false},
		{"update the cursor after the page", false},
		{"psql connects to the warehouse with search_path set to WAREHOUSE_SCHEMA.", false},
		{"role %s lacks %s on %s", false},
		{"CREATE", false},
		{"create schema: %w", false},
		{"create table if not exists x (a int)", true},
	} {
		got := false
		for _, re := range sqlLike {
			got = got || re.MatchString(c.text)
		}
		if got != c.sql {
			t.Errorf("%q: detected %v, want %v", c.text, got, c.sql)
		}
	}
}
