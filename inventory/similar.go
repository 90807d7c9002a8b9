package inventory

import "strings"

// concepts maps a name token to the concepts it can stand for: the words
// that agency and finance APIs use for the same thing (title for name,
// state for status, due for deadline, total for amount, no for number).
var concepts = map[string][]string{
	"name": {"name"}, "title": {"name", "position"}, "label": {"name"}, "subject": {"name"},
	"status": {"status"}, "state": {"status"}, "stage": {"status"}, "phase": {"status"},
	"deadline": {"due"}, "due": {"due"},
	"amount": {"amount"}, "total": {"amount"}, "sum": {"amount"}, "value": {"amount"}, "price": {"amount"},
	"number": {"number"}, "no": {"number"}, "nr": {"number"}, "num": {"number"},
	"start": {"start"}, "starts": {"start"}, "begin": {"start"}, "begins": {"start"}, "from": {"start"},
	"end": {"end"}, "ends": {"end"}, "until": {"end"},
	"date": {"date"}, "on": {"date"}, "at": {"date"}, "day": {"date"}, "time": {"date"},
	"position": {"position"}, "job": {"position"}, "role": {"position"},
	"first": {"first"}, "given": {"first"}, "forename": {"first"},
	"last": {"last"}, "family": {"last"}, "surname": {"last"},
	"primary": {"primary"}, "main": {"primary"},
	"issue": {"issue"}, "issued": {"issue"},
	"paid": {"pay"}, "pay": {"pay"}, "payment": {"pay"},
	"collected": {"collect"}, "collection": {"collect"},
	"currency": {"currency"}, "cur": {"currency"},
	"email": {"email"}, "mail": {"email"}, "phone": {"phone"}, "tel": {"phone"}, "mobile": {"phone"},
	"id": {"id"}, "key": {"id"},
	"budget": {"budget"}, "cost": {"cost"}, "revenue": {"revenue"}, "margin": {"margin"},
}

// compounds splits names written without separators.
var compounds = map[string][]string{
	"firstname": {"first", "name"}, "lastname": {"last", "name"}, "fullname": {"full", "name"},
	"surname": {"surname"}, "duedate": {"due", "date"}, "startdate": {"start", "date"},
	"enddate": {"end", "date"},
}

// weak concepts say less about what a field is than the others.
var weak = map[string]float64{"date": 0.5, "id": 0.5}

// stopwords carry no meaning in a field name.
var stopwords = map[string]bool{"is": true, "has": true, "the": true, "of": true}

// nameConcepts returns the weighted concepts of a field path's names.
func nameConcepts(path string) map[string]float64 {
	out := map[string]float64{}
	words := strings.FieldsFunc(strings.ToLower(camelToSnake(path)), func(r rune) bool {
		return r == '_' || r == '.' || r == '[' || r == ']' || r == '-' || r == ' '
	})
	var toks []string
	for _, w := range words {
		if parts, ok := compounds[w]; ok {
			toks = append(toks, parts...)
		} else {
			toks = append(toks, w)
		}
	}
	for _, t := range toks {
		if stopwords[t] {
			continue
		}
		cs, ok := concepts[t]
		if !ok {
			cs = []string{t}
		}
		for _, c := range cs {
			w := 1.0
			if v, ok := weak[c]; ok {
				w = v
			}
			out[c] = max(out[c], w)
		}
	}
	return out
}

func camelToSnake(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' && i > 0 && s[i-1] >= 'a' && s[i-1] <= 'z' {
			b.WriteByte('_')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Similarity rates how much two field paths look like names of the same
// thing, 0..1: the weighted overlap of their names' concepts (synonyms
// included), or, for a misspelling, the edit similarity of their last names.
func Similarity(a, b string) float64 {
	ca, cb := nameConcepts(a), nameConcepts(b)
	var inter, union float64
	for c, w := range ca {
		if v, ok := cb[c]; ok {
			inter += min(w, v)
			union += max(w, v)
		} else {
			union += w
		}
	}
	for c, w := range cb {
		if _, ok := ca[c]; !ok {
			union += w
		}
	}
	s := 0.0
	if union > 0 {
		s = inter / union
	}
	return max(s, editSimilarity(lastName(a), lastName(b)))
}

func lastName(p string) string {
	p = strings.TrimSuffix(p, "[]")
	if i := strings.LastIndexAny(p, ".]"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// editSimilarity is 1 − Levenshtein distance / longer length, counted only
// from 0.8 up (a typo, not a different word).
func editSimilarity(a, b string) float64 {
	a, b = strings.ToLower(a), strings.ToLower(b)
	n := max(len(a), len(b))
	if n < 4 {
		return 0
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	s := 1 - float64(prev[len(b)])/float64(n)
	if s < 0.8 {
		return 0
	}
	return s
}
