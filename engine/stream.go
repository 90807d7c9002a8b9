package engine

import (
	"fmt"
	"slices"
	"strings"
)

// The streams of a sync. Each keeps its own state in sync_state.
const (
	StreamBrands         = "brands"         // list, details, contacts
	StreamProjects       = "projects"       // list, details
	StreamFinance        = "finance"        // budgets, invoices, collections, payments, profitability, summary
	StreamCommunications = "communications" // e-mails, recipients, users
)

// AllStreams lists every stream in its default order.
var AllStreams = []string{StreamBrands, StreamProjects, StreamFinance, StreamCommunications}

// ParseStreams parses a comma-separated stream selection; empty selects all.
func ParseStreams(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return AllStreams, nil
	}
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(part)
		if !slices.Contains(AllStreams, name) {
			return nil, fmt.Errorf("parse streams: unknown stream %q (want %s)", name, strings.Join(AllStreams, ","))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}
