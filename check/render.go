package check

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report for a person: one line per endpoint, under
// it each failing column with the unmapped fields that look like its
// replacement, the endpoint's unmapped fields, and a verdict.
func WriteTable(w io.Writer, r *Report) error {
	budget := "no daily budget"
	if r.Budget >= 0 {
		budget = fmt.Sprintf("today's budget allowed %d", r.Budget)
	}
	fmt.Fprintf(w, "agencysync check: %d requests sent, each counted in today's quota (%s)\n\n", r.Requests, budget)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tREQUEST\tHTTP\tENVELOPE\tPAGING\tCOLUMNS\tRESULT")
	failing := 0
	for _, e := range r.Endpoints {
		status := "-"
		if e.Status > 0 {
			status = fmt.Sprint(e.Status)
		}
		bad := 0
		for _, c := range e.Columns {
			if c.Failed() {
				bad++
			}
		}
		failing += bad
		cols := "-"
		if len(e.Columns) > 0 {
			cols = fmt.Sprintf("%d/%d", len(e.Columns)-bad, len(e.Columns))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Endpoint, e.Request, status, orDash(e.Envelope), paging(e), cols, strings.ToUpper(e.Outcome))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write check table: %w", err)
	}
	for _, e := range r.Endpoints {
		var lines []string
		if e.Error != "" {
			lines = append(lines, e.Error)
		}
		for _, c := range e.Columns {
			switch c.State {
			case StateMissing:
				l := fmt.Sprintf("%s: field %s is missing", c.Column, c.Field)
				if len(c.Candidates) > 0 {
					l += fmt.Sprintf("; it looks like %s (map it: AGENCY_FIELD_MAP=%s=%s)", strings.Join(c.Candidates, " or "), c.Column, c.Candidates[0])
				} else {
					l += "; no unmapped field looks like it"
				}
				lines = append(lines, l)
			case StateUnparsed:
				lines = append(lines, fmt.Sprintf("%s: field %s is %s", c.Column, c.Field, c.Problem))
			}
		}
		lines = append(lines, e.Problems...)
		if pg := e.Paging; pg != nil && !pg.Honoured {
			lines = append(lines, pagingLines(pg)...)
		}
		if e.Note != "" {
			lines = append(lines, e.Note)
		}
		if len(e.Unmapped) > 0 {
			var fs []string
			for _, f := range e.Unmapped {
				fs = append(fs, f.Path+" ("+strings.Join(f.Types, "|")+")")
			}
			lines = append(lines, "unmapped fields: "+strings.Join(fs, ", "))
		}
		if len(lines) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s):\n", e.Endpoint, e.Request)
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintln(w)
	writeVerdict(w, r, failing)
	return nil
}

// writeVerdict prints the check's verdict; failing is the number of
// mapped columns that fail.
func writeVerdict(w io.Writer, r *Report, failing int) {
	switch r.Outcome {
	case OutcomeOK:
		fmt.Fprintln(w, "Verdict: everything maps.")
	case OutcomeMismatch:
		fmt.Fprintf(w, "Verdict: %d mapped fields are missing or unreadable. Map each with AGENCY_FIELD_MAP (suggestions above), then run check again.\n", failing)
	case OutcomePaging:
		n := 0
		for _, e := range r.Endpoints {
			if e.Paging != nil && !e.Paging.Honoured {
				n++
			}
		}
		if r.PagingSetting != "" {
			fmt.Fprintf(w, "Verdict: %d lists do not page as configured (a run would end partial, unable to prove them complete). Set AGENCY_PAGING='%s', then run check again.\n", n, r.PagingSetting)
		} else {
			fmt.Fprintf(w, "Verdict: %d lists do not page as configured, and no paging the check knows fits them (see above).\n", n)
		}
	case OutcomeUnauthorized:
		fmt.Fprintln(w, "Verdict: a key was refused (401): check the API token under \"My Account\" in the platform.")
	case OutcomeBudget:
		fmt.Fprintln(w, "Verdict: today's request budget is spent; endpoints marked SKIPPED were not asked. Run check again after the quota day resets.")
	default:
		fmt.Fprintln(w, "Verdict: endpoints failed (see above).")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// paging says which paging fields an answer carried: all, none or which.
func paging(e Endpoint) string {
	switch {
	case e.Envelope == "":
		return "-"
	case len(e.PagingFields) == 4:
		return "all"
	case len(e.PagingFields) == 0:
		return "none"
	}
	return strings.Join(e.PagingFields, ",")
}

// pagingLines tell of a list that does not page as configured.
func pagingLines(pg *Paging) []string {
	out := []string{fmt.Sprintf("paging: configured %s; %s", pg.Configured, pg.Note)}
	if pg.Found != "" {
		l := "the server honours the paging " + pg.Found
		if pg.Max > 0 {
			l += fmt.Sprintf(" (at most %d rows a page)", pg.Max)
		}
		out = append(out, l+"; set "+pg.Setting)
	}
	return out
}
