package benchmark

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Save writes the report as JSON, for a later session's MergeEarlier.
func (r *Report) Save(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("save report: %w", err)
	}
	return nil
}

// LoadReport reads a report that Save wrote.
func LoadReport(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("load report: %w", err)
	}
	return &r, nil
}

// MergeEarlier completes r with the rows of the figures r did not measure,
// taken from an earlier session's report; the Markdown then says which
// figures come from that session and describes its machine.
func (r *Report) MergeEarlier(earlier *Report) {
	measured := map[string]bool{}
	for _, row := range r.Rows {
		measured[row.ID] = true
	}
	kept := false
	for _, row := range earlier.Rows {
		if !measured[row.ID] {
			r.Rows = append(r.Rows, row)
			kept = true
		}
	}
	if kept {
		r.Rows = sortRows(r.Rows)
		r.Earlier = earlier
	}
}

// earlierNote is the Markdown section about the rows of an earlier session.
func (r *Report) earlierNote() string {
	e := r.Earlier
	if e == nil {
		return ""
	}
	var own, kept []string
	for _, row := range r.Rows {
		if slices.ContainsFunc(e.Rows, func(o Row) bool { return o == row }) {
			if !slices.Contains(kept, row.ID) {
				kept = append(kept, row.ID)
			}
		} else if !slices.Contains(own, row.ID) {
			own = append(own, row.ID)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n**%s from a separate session** of the same harness (%s, in %s), run just before this one;\n"+
		"%s measured in this session, as above. The separate session's machine:\n\n",
		plural(kept, "Figure %s comes", "Figures %s come"), e.Machine.Commit, e.Took.Round(time.Second), plural(own, "figure %s was", "figures %s were"))
	b.WriteString(e.Machine.Markdown())
	b.WriteString(e.otherCPU())
	b.WriteString(e.busyNote())
	return b.String()
}

// plural formats ids with one or many, by their count.
func plural(ids []string, one, many string) string {
	if len(ids) == 1 {
		return fmt.Sprintf(one, ids[0])
	}
	return fmt.Sprintf(many, strings.Join(ids, ", "))
}

// separateMark ends the heading of a BENCHMARKS.md section that make bench
// does not produce (figures measured by other means); such sections are
// kept when the file is rewritten.
const separateMark = "(measured separately)"

// KeepSeparateSections returns fresh (the harness's Markdown) followed by
// the sections of old whose "## " heading ends with "(measured
// separately)", each up to the next "## " heading that does not.
func KeepSeparateSections(old, fresh string) string {
	var kept []string
	keep := false
	for _, line := range strings.SplitAfter(old, "\n") {
		if strings.HasPrefix(line, "## ") {
			keep = strings.HasSuffix(strings.TrimSpace(line), separateMark)
		}
		if keep {
			kept = append(kept, line)
		}
	}
	if len(kept) == 0 {
		return fresh
	}
	return strings.TrimRight(fresh, "\n") + "\n\n" + strings.Join(kept, "")
}
