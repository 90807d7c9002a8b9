package config

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// files serves the named contents as ReadFile does (tests).
func files(m map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := m[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
}

const renamedProjectsYAML = `# the service names these project fields differently
projects:
  name: title
  status: state
  deadline: due_date
  budget_amount: budget_total
brands:
  name: "company.name"
`

func TestFieldMapFromVariableAndFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		vars  map[string]string
		files map[string]string
		want  map[string]string
	}{
		{"unset", nil, nil, nil},
		{"variable",
			map[string]string{"AGENCY_FIELD_MAP": "projects.name=title,projects.status=state, projects.deadline=due_date,projects.budget_amount=budget_total,"},
			nil,
			map[string]string{"projects.name": "title", "projects.status": "state", "projects.deadline": "due_date", "projects.budget_amount": "budget_total"}},
		{"nested path", map[string]string{"AGENCY_FIELD_MAP": "brands.total_budget=finance.summary.total"}, nil,
			map[string]string{"brands.total_budget": "finance.summary.total"}},
		{"file", map[string]string{"AGENCY_FIELD_MAP_FILE": "/etc/agencysync/fields.yaml"},
			map[string]string{"/etc/agencysync/fields.yaml": renamedProjectsYAML},
			map[string]string{"projects.name": "title", "projects.status": "state", "projects.deadline": "due_date",
				"projects.budget_amount": "budget_total", "brands.name": "company.name"}},
		{"variable overrides the file pair by pair",
			map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml", "AGENCY_FIELD_MAP": "projects.status=status_label,emails.subject=title"},
			map[string]string{"/f.yaml": renamedProjectsYAML},
			map[string]string{"projects.name": "title", "projects.status": "status_label", "projects.deadline": "due_date",
				"projects.budget_amount": "budget_total", "brands.name": "company.name", "emails.subject": "title"}},
		{"empty file", map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml"}, map[string]string{"/f.yaml": "# nothing mapped yet\n"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := mustLoad(t, env(c.vars), files(c.files))
			if !reflect.DeepEqual(cfg.FieldMap, c.want) {
				t.Errorf("FieldMap %v, want %v", cfg.FieldMap, c.want)
			}
		})
	}
}

// TestFieldMapSyntaxErrorsNameTheVariable: a malformed pair or file is a
// configuration error (exit 2) naming the variable and saying what is wrong.
func TestFieldMapSyntaxErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		variable, value string
		file            string // contents of /f.yaml, for AGENCY_FIELD_MAP_FILE
		problem         string // part of the message
	}{
		{"AGENCY_FIELD_MAP", "projects.name", "", "not table.column=path"},
		{"AGENCY_FIELD_MAP", "projects=title", "", "not table.column"},
		{"AGENCY_FIELD_MAP", "Projects.Name=title", "", "not table.column"},
		{"AGENCY_FIELD_MAP", "projects.name.first=title", "", "not table.column"},
		{"AGENCY_FIELD_MAP", "projects.name=", "", "no source field path"},
		{"AGENCY_FIELD_MAP", "projects.name=financial_summary..total", "", "empty part"},
		{"AGENCY_FIELD_MAP", "projects.name=ti tle", "", "holds"},
		{"AGENCY_FIELD_MAP", "projects.name=title;projects.status=state", "", "holds"},
		{"AGENCY_FIELD_MAP", "projects.name=title,projects.name=label", "", "mapped twice"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "projects: [name, title]\n", "line 1"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "- projects\n", "want a mapping of tables"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "projects.name: title\n", "line 1"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "projects:\n  name: title\n  status: 3\n", "line 3"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "projects:\n  name:\n", "line 2"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "projects:\n  name: title\n  name: label\n", "mapped twice"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "projects:\n  name: title\nprojects:\n  status: state\n", "line 3"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "projects:\n  name: title\n status: [\n", "not YAML"},
		{"AGENCY_FIELD_MAP_FILE", "/f.yaml", "projects:\n  Name: title\n", "not a column name"},
		{"AGENCY_FIELD_MAP_FILE", "/missing.yaml", "", "cannot read"},
	}
	for _, c := range cases {
		t.Run(c.variable+"="+c.value+c.file, func(t *testing.T) {
			t.Parallel()
			_, err := loadTest(env(map[string]string{c.variable: c.value}), files(map[string]string{"/f.yaml": c.file}))
			assertVariable(t, err, c.variable)
			if !strings.Contains(err.Error(), c.problem) {
				t.Errorf("error %q does not say %q", err, c.problem)
			}
		})
	}
}

// TestFieldMapValidatorNamesTheSource: Known.FieldMap sees each source's
// pairs, and what it refuses is an error naming the variable they came from.
func TestFieldMapValidatorNamesTheSource(t *testing.T) {
	t.Parallel()
	columns := map[string][]string{"projects": {"name", "status", "deadline", "budget_amount"}, "brands": {"name"}}
	var seen []map[string]string
	known := testKnown
	known.FieldMap = func(m map[string]string) error {
		seen = append(seen, maps.Clone(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			table, column, _ := strings.Cut(k, ".")
			cols, ok := columns[table]
			if !ok {
				return fmt.Errorf("unknown table %s", table)
			}
			if !slices.Contains(cols, column) {
				return fmt.Errorf("unknown column %s of %s", column, table)
			}
		}
		return nil
	}
	load := func(vars map[string]string) error {
		_, err := LoadFrom(context.Background(), Environment{Lookup: env(vars), ReadFile: files(map[string]string{"/f.yaml": renamedProjectsYAML,
			"/bad.yaml": "tasks:\n  title: name\n"})}, known)
		return err
	}
	if err := load(map[string]string{"AGENCY_FIELD_MAP_FILE": "/f.yaml", "AGENCY_FIELD_MAP": "projects.status=state"}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || len(seen[0]) != 5 || !reflect.DeepEqual(seen[1], map[string]string{"projects.status": "state"}) {
		t.Errorf("validator saw %v, want the file's 5 pairs then the variable's 1", seen)
	}
	err := load(map[string]string{"AGENCY_FIELD_MAP": "projects.title=name"})
	assertVariable(t, err, "AGENCY_FIELD_MAP")
	if !strings.Contains(err.Error(), "unknown column title of projects") {
		t.Errorf("error %q does not name the column", err)
	}
	err = load(map[string]string{"AGENCY_FIELD_MAP_FILE": "/bad.yaml", "AGENCY_FIELD_MAP": "projects.name=title"})
	assertVariable(t, err, "AGENCY_FIELD_MAP_FILE")
	if !strings.Contains(err.Error(), "unknown table tasks") || !strings.Contains(err.Error(), "/bad.yaml") {
		t.Errorf("error %q does not name the table and the file", err)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("%T is not *Error", err)
	}
}

// TestFieldMapFileOnDisk reads a real file through os.ReadFile, as the
// binary does.
func TestFieldMapFileOnDisk(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fields.yaml")
	if err := os.WriteFile(path, []byte(renamedProjectsYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := mustLoad(t, env(map[string]string{"AGENCY_FIELD_MAP_FILE": path}), os.ReadFile)
	if cfg.FieldMap["projects.budget_amount"] != "budget_total" || len(cfg.FieldMap) != 5 {
		t.Errorf("FieldMap %v", cfg.FieldMap)
	}
}

// FuzzFieldMapPairs: whatever AGENCY_FIELD_MAP accepts prints back (as
// `config --effective` shows it) to a text that parses to the same pairs,
// and every pair it accepts passes the checks the file's pairs pass.
func FuzzFieldMapPairs(f *testing.F) {
	for _, s := range []string{"projects.name=title,projects.status=state", " a.b = c.d ,", "projects.name=ti tle", "x.y=z=w", "",
		"brands.total_budget=financial_summary.total_budget", "p.q=é.ü", "p.q=a\u00a0b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m FieldMapPairs
		if err := m.EnvDecode(s); err != nil {
			return
		}
		for k, v := range m {
			if checkColumnKey(k) != nil || checkFieldPath(v) != nil {
				t.Fatalf("accepted %q=%q from %q", k, v, s)
			}
		}
		var back FieldMapPairs
		if err := back.EnvDecode(m.String()); err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", s, m.String(), err)
		}
		if !maps.Equal(back, m) {
			t.Fatalf("%q: %v printed and parsed back as %v", s, m, back)
		}
	})
}
