package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// FieldMapPairs is AGENCY_FIELD_MAP: comma-separated "table.column=path"
// pairs mapping a warehouse column to the source field it is read from,
// e.g. "projects.name=title,projects.status=state". Config.FieldMap holds
// the result merged with AGENCY_FIELD_MAP_FILE.
type FieldMapPairs map[string]string

// EnvDecode implements envconfig.Decoder: the syntax only (Known.FieldMap
// checks the tables and columns).
func (m *FieldMapPairs) EnvDecode(v string) error {
	out, err := parsePairs(v, "%s mapped twice", func(pair, key, path string, ok bool) string {
		if !ok {
			return fmt.Sprintf("%q is not table.column=path", pair)
		}
		if err := checkColumnKey(key); err != nil {
			return fmt.Sprintf("%q: %v", pair, err)
		}
		if err := checkFieldPath(path); err != nil {
			return fmt.Sprintf("%q: %v", pair, err)
		}
		return ""
	})
	if err != nil {
		return err
	}
	*m = out
	return nil
}

// String renders the pairs sorted by column: "table.column=path,…".
func (m FieldMapPairs) String() string {
	keys := slices.Sorted(maps.Keys(m))
	for i, k := range keys {
		keys[i] = k + "=" + m[k]
	}
	return strings.Join(keys, ",")
}

var warehouseIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// checkColumnKey checks a "table.column" key: two plain lowercase
// identifiers joined by one dot.
func checkColumnKey(key string) error {
	table, column, ok := strings.Cut(key, ".")
	if !ok || !warehouseIdent.MatchString(table) || !warehouseIdent.MatchString(column) {
		return fmt.Errorf("%q is not table.column (lowercase warehouse names)", key)
	}
	return nil
}

// checkFieldPath checks a source field path: field names joined by dots
// (one level per dot, e.g. financial_summary.total_budget), each non-empty
// and free of white space, control characters, "," and "=".
func checkFieldPath(path string) error {
	if path == "" {
		return errors.New("no source field path")
	}
	for seg := range strings.SplitSeq(path, ".") {
		if seg == "" {
			return fmt.Errorf("source field path %q has an empty part", path)
		}
		if i := strings.IndexFunc(seg, func(r rune) bool {
			return unicode.IsSpace(r) || unicode.IsControl(r) || r == ',' || r == '='
		}); i >= 0 {
			return fmt.Errorf("source field path %q holds %q", path, seg[i:i+1])
		}
	}
	return nil
}

// parseFieldMapFile reads AGENCY_FIELD_MAP_FILE's YAML: a mapping of table
// names, each a mapping of column names to source field paths:
//
//	projects:
//	  name: title
//	  status: state
//	  budget_amount: budget_total
//
// The result is keyed "table.column" like AGENCY_FIELD_MAP. A top-level
// paging: mapping holds paging settings as AGENCY_PAGING names them
// (parsePagingNode):
//
//	paging:
//	  "*": offset:max=100
//	  brand_contacts: {style: none}
//
// Errors name the line.
func parseFieldMapFile(data []byte) (map[string]string, PagingSettings, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("not YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	out := map[string]string{}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return out, nil, nil // an empty file maps nothing
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("line %d: want a mapping of tables, each a mapping of column: source.path", root.Line)
	}
	var paging PagingSettings
	pagingSeen := false
	tables := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		tk, tv := root.Content[i], root.Content[i+1]
		if tk.Kind == yaml.ScalarNode && tk.Value == "paging" {
			if pagingSeen {
				return nil, nil, fmt.Errorf("line %d: paging twice", tk.Line)
			}
			p, err := parsePagingNode(tv)
			if err != nil {
				return nil, nil, err
			}
			paging, pagingSeen = p, true
			continue
		}
		if tk.Kind != yaml.ScalarNode || !warehouseIdent.MatchString(tk.Value) {
			return nil, nil, fmt.Errorf("line %d: %q is not a table name (lowercase warehouse name)", tk.Line, tk.Value)
		}
		if tables[tk.Value] {
			return nil, nil, fmt.Errorf("line %d: table %s twice", tk.Line, tk.Value)
		}
		tables[tk.Value] = true
		if tv.Kind != yaml.MappingNode {
			return nil, nil, fmt.Errorf("line %d: table %s: want a mapping of column: source.path", tv.Line, tk.Value)
		}
		for j := 0; j+1 < len(tv.Content); j += 2 {
			ck, cv := tv.Content[j], tv.Content[j+1]
			if ck.Kind != yaml.ScalarNode || !warehouseIdent.MatchString(ck.Value) {
				return nil, nil, fmt.Errorf("line %d: %q is not a column name (lowercase warehouse name)", ck.Line, ck.Value)
			}
			key := tk.Value + "." + ck.Value
			if _, dup := out[key]; dup {
				return nil, nil, fmt.Errorf("line %d: %s mapped twice", ck.Line, key)
			}
			if cv.Kind != yaml.ScalarNode || cv.Tag != "!!str" {
				return nil, nil, fmt.Errorf("line %d: %s: want a source field path as a string (quote it)", cv.Line, key)
			}
			if err := checkFieldPath(cv.Value); err != nil {
				return nil, nil, fmt.Errorf("line %d: %s: %w", cv.Line, key, err)
			}
			out[key] = cv.Value
		}
	}
	return out, paging, nil
}

// loadFieldMap reads AGENCY_FIELD_MAP_FILE (if set), overrides its pairs with
// AGENCY_FIELD_MAP's and its paging: entries with AGENCY_PAGING's, and
// checks each source against known (known.FieldMap, if not nil, and the
// paging names), so that an unknown table, column or endpoint names the
// variable it came from.
func (c *Config) loadFieldMap(readFile func(string) ([]byte, error), known Known) error {
	var p problems
	merged := map[string]string{}
	paging := PagingSettings{}
	if c.FieldMapFile != "" {
		fromFile, filePaging, err := c.readFieldMapFile(readFile, known)
		p.add(err)
		maps.Copy(paging, filePaging)
		maps.Copy(merged, fromFile)
	}
	if known.FieldMap != nil && len(c.FieldMapPairs) > 0 {
		if err := known.FieldMap(map[string]string(c.FieldMapPairs)); err != nil {
			p.field("FieldMapPairs", err.Error())
		}
	}
	maps.Copy(merged, c.FieldMapPairs)
	if len(merged) > 0 {
		c.FieldMap = merged
	}
	maps.Copy(paging, c.PagingPairs)
	if len(paging) > 0 {
		c.Paging = paging
	}
	return p.err()
}

// readFieldMapFile reads and checks AGENCY_FIELD_MAP_FILE: its field map
// and its paging.
func (c *Config) readFieldMapFile(readFile func(string) ([]byte, error), known Known) (map[string]string, PagingSettings, error) {
	data, err := readFile(c.FieldMapFile)
	if err != nil {
		return nil, nil, fieldError("FieldMapFile", fmt.Sprintf("cannot read %q", c.FieldMapFile))
	}
	fromFile, filePaging, err := parseFieldMapFile(data)
	if err != nil {
		return nil, nil, fieldError("FieldMapFile", fmt.Sprintf("%s: %v", c.FieldMapFile, err))
	}
	if err := filePaging.check(known.PagingLists, known.FixedPaging); err != nil {
		return nil, nil, fieldError("FieldMapFile", fmt.Sprintf("%s: paging: %v", c.FieldMapFile, err))
	}
	if known.FieldMap != nil && len(fromFile) > 0 {
		if err := known.FieldMap(fromFile); err != nil {
			return nil, nil, fieldError("FieldMapFile", fmt.Sprintf("%s: %v", c.FieldMapFile, err))
		}
	}
	return fromFile, filePaging, nil
}
