package extract

import "strings"

// nextLink is the target of the rel="next" link of RFC 8288 Link header
// values ("" when none): `<https://api.example/v1/brands?page=2>; rel="next"`.
// A rel may list several relation types ("next last").
func nextLink(values []string) string {
	for _, v := range values {
		for len(v) > 0 {
			open := strings.IndexByte(v, '<')
			if open < 0 {
				break
			}
			end := strings.IndexByte(v[open:], '>')
			if end < 0 {
				break
			}
			target := v[open+1 : open+end]
			rest := v[open+end+1:]
			params := rest
			if next := strings.IndexByte(rest, '<'); next >= 0 {
				params = rest[:next]
			}
			if linkRel(params, "next") {
				return strings.TrimSpace(target)
			}
			v = rest
		}
	}
	return ""
}

// linkRel reports whether a link's parameters (`; rel="next", `) give it
// the relation type rel.
func linkRel(params, rel string) bool {
	for p := range strings.SplitSeq(params, ";") {
		name, value, ok := strings.Cut(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(p), ",")), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "rel") {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		for t := range strings.FieldsSeq(value) {
			if strings.EqualFold(t, rel) {
				return true
			}
		}
	}
	return false
}
