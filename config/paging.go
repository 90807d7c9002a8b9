package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// PagingSetting is one endpoint's paging in AGENCY_PAGING (or under
// paging: in AGENCY_FIELD_MAP_FILE): a style and the options it names.
// Empty names and a zero Max keep the style's defaults.
type PagingSetting struct {
	// Style is page, offset, cursor or none.
	Style string
	// Page, Size, Offset and Cursor rename the parameters (page=, size=,
	// offset=, cursor=).
	Page, Size, Offset, Cursor string
	// Max is the largest page size asked for (max=, 1..1000).
	Max int
}

// String renders s as AGENCY_PAGING writes it: "style:option=value…".
func (s PagingSetting) String() string {
	out := s.Style
	for _, o := range []struct{ name, v string }{{"page", s.Page}, {"size", s.Size}, {"offset", s.Offset}, {"cursor", s.Cursor}} {
		if o.v != "" {
			out += ":" + o.name + "=" + o.v
		}
	}
	if s.Max > 0 {
		out += ":max=" + strconv.Itoa(s.Max)
	}
	return out
}

// PagingStyles are the styles a PagingSetting may name.
var PagingStyles = []string{"page", "offset", "cursor", "none"}

// maxPageSize is the service's limit of rows per request.
const maxPageSize = 1000

// paramName is a query parameter name a paging option may set.
var paramName = regexp.MustCompile(`^[A-Za-z0-9_.\-\[\]]{1,64}$`)

// parsePaging reads one endpoint's value, "style[:option=value…]", and
// checks it: a known style, known options each once and of that style,
// parameter names, max within 1..1000.
func parsePaging(v string) (PagingSetting, error) {
	parts := strings.Split(v, ":")
	s := PagingSetting{Style: strings.TrimSpace(parts[0])}
	if !slices.Contains(PagingStyles, s.Style) {
		return s, fmt.Errorf("style %q is not one of %s", s.Style, strings.Join(PagingStyles, ", "))
	}
	seen := map[string]bool{}
	for _, opt := range parts[1:] {
		name, value, ok := cutTrimmed(opt, "=")
		if !ok || value == "" {
			return s, fmt.Errorf("%q is not option=value", opt)
		}
		if seen[name] {
			return s, fmt.Errorf("option %s= twice", name)
		}
		seen[name] = true
		if err := s.set(name, value); err != nil {
			return s, err
		}
	}
	return s, nil
}

// set sets option name of s to value.
func (s *PagingSetting) set(name, value string) error {
	if name == "max" {
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > maxPageSize {
			return fmt.Errorf("max=%s is not a page size from 1 to %d", value, maxPageSize)
		}
		s.Max = n
		return nil
	}
	var dst *string
	only := ""
	switch name {
	case "page":
		dst, only = &s.Page, "page"
	case "size":
		dst = &s.Size
	case "offset":
		dst, only = &s.Offset, "offset"
	case "cursor":
		dst, only = &s.Cursor, "cursor"
	default:
		return fmt.Errorf("unknown option %s= (options: page=, size=, offset=, cursor=, max=)", name)
	}
	if only != "" && s.Style != only {
		return fmt.Errorf("%s= does not apply to style %s", name, s.Style)
	}
	if !paramName.MatchString(value) {
		return fmt.Errorf("%s=%s is not a parameter name", name, value)
	}
	*dst = value
	return nil
}

// PagingSettings is AGENCY_PAGING: comma-separated
// "endpoint=style[:option=value…]" entries, the endpoint an AGENCY_PATHS
// name of a list or "*" for every list of the main interface, e.g.
// "*=offset:max=100,brand_contacts=none".
type PagingSettings map[string]PagingSetting

// EnvDecode implements envconfig.Decoder: the syntax (Load checks the
// endpoint names against Known).
func (p *PagingSettings) EnvDecode(v string) error {
	out := PagingSettings{}
	for entry := range listItems(v, ",") {
		name, value, ok := cutTrimmed(entry, "=")
		if !ok || name == "" || value == "" {
			return &valueError{fmt.Sprintf("%q is not endpoint=style[:option=value…]", entry)}
		}
		if _, dup := out[name]; dup {
			return &valueError{fmt.Sprintf("endpoint %q twice", name)}
		}
		s, err := parsePaging(value)
		if err != nil {
			return &valueError{fmt.Sprintf("%s: %v", name, err)}
		}
		out[name] = s
	}
	if len(out) == 0 {
		out = nil
	}
	*p = out
	return nil
}

// String renders the entries sorted by endpoint ("*" first).
func (p PagingSettings) String() string {
	names := slices.Sorted(maps.Keys(p))
	for i, n := range names {
		names[i] = n + "=" + p[n].String()
	}
	return strings.Join(names, ",")
}

// check checks the endpoint names: "*", a list of lists, or one of fixed
// whose paging only takes max= (style page).
func (p PagingSettings) check(lists, fixed []string) error {
	for _, name := range slices.Sorted(maps.Keys(p)) {
		s := p[name]
		switch {
		case name == "*" || slices.Contains(lists, name):
		case slices.Contains(fixed, name):
			if s.Style != "page" || s.Page != "" || s.Size != "" {
				return &valueError{fmt.Sprintf("%s: its paging is fixed by the spec (page); only max= may be set, e.g. %s=page:max=500", name, name)}
			}
		default:
			return &valueError{fmt.Sprintf("unknown list endpoint %q (lists: %s, or * for every list of the main interface)",
				name, strings.Join(append(slices.Clone(lists), fixed...), ","))}
		}
	}
	return nil
}

// parsePagingNode reads the field map file's paging: mapping, endpoint →
// "style[:option=value…]" or a mapping of style:, page:, size:, offset:,
// cursor: and max:. Errors name the line.
func parsePagingNode(n *yaml.Node) (PagingSettings, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: paging: want a mapping of endpoint: style[:option=value…]", n.Line)
	}
	out := PagingSettings{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("line %d: paging: endpoint %s twice", k.Line, k.Value)
		}
		var s PagingSetting
		var err error
		switch v.Kind {
		case yaml.ScalarNode:
			s, err = parsePaging(v.Value)
		case yaml.MappingNode:
			s, err = pagingMapping(v)
		default:
			err = fmt.Errorf("want style[:option=value…] or a mapping of style:, size:, max:, …")
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: paging: %s: %v", v.Line, k.Value, err)
		}
		out[k.Value] = s
	}
	return out, nil
}

// pagingMapping reads {style: offset, size: per_page, max: 100}.
func pagingMapping(n *yaml.Node) (PagingSetting, error) {
	var s PagingSetting
	opts := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return s, fmt.Errorf("%s: want a value", k.Value)
		}
		if _, dup := opts[k.Value]; dup {
			return s, fmt.Errorf("%s: twice", k.Value)
		}
		opts[k.Value] = v.Value
	}
	style, ok := opts["style"]
	if !ok {
		return s, fmt.Errorf("no style: (one of %s)", strings.Join(PagingStyles, ", "))
	}
	text := style
	for _, name := range slices.Sorted(maps.Keys(opts)) {
		if name != "style" {
			text += ":" + name + "=" + opts[name]
		}
	}
	return parsePaging(text)
}
