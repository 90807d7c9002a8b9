package inventory

import (
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// WarningsMetric is the name of the gauge of coverage warnings.
const WarningsMetric = "agencysync_source_field_warnings"

// AllKinds lists the warning kinds, in the order status prints them.
var AllKinds = []Kind{KindNullColumn, KindRejectedStream, KindNewField, KindInvalidUTF8, KindDuplicateID}

// NewWarningsGauge creates agencysync_source_field_warnings{stream,kind}:
// the warnings of each kind of the last run that synced each stream. It is
// registered with reg unless reg is nil.
func NewWarningsGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: WarningsMetric,
		Help: "Coverage warnings of the last run that synced each stream, by kind: null_column (a mapped column NULL in at least 95 % of the records), rejected_stream (at least 50 % rejected), new_field (a field never seen before).",
	}, []string{"stream", "kind"})
	if reg != nil {
		reg.MustRegister(g)
	}
	return g
}

// SetWarnings sets g from a run's warnings: for each stream the run synced,
// every kind is set to its number of warnings (0 when none), so a warning
// that went away stops showing.
func SetWarnings(g *prometheus.GaugeVec, streams []string, ws []Warning) {
	n := map[string]map[Kind]int{}
	for _, s := range streams {
		n[s] = map[Kind]int{}
	}
	for _, w := range ws {
		if n[w.Stream] == nil {
			n[w.Stream] = map[Kind]int{}
		}
		n[w.Stream][w.Kind]++
	}
	for s, kinds := range n {
		for _, k := range AllKinds {
			g.WithLabelValues(s, string(k)).Set(float64(kinds[k]))
		}
	}
}

// LogWarnings logs each warning as one line naming its stream, column or
// field, and candidates.
func LogWarnings(log *zap.Logger, ws []Warning) {
	for _, w := range ws {
		fields := []zap.Field{zap.String("kind", string(w.Kind)), zap.String("stream", w.Stream)}
		if w.Column != "" {
			fields = append(fields, zap.String("column", w.Column))
		}
		if w.Field != "" {
			fields = append(fields, zap.String("field", w.Field))
		}
		if w.Kind != KindNewField {
			fields = append(fields, zap.Int64("records", w.Records), zap.Int64("count", w.Count), zap.Float64("share", w.Share))
		}
		if w.Reason != "" {
			fields = append(fields, zap.String("reason", w.Reason))
		}
		if len(w.Candidates) > 0 {
			fields = append(fields, zap.Strings("candidates", w.Candidates))
		}
		log.Warn(w.Message, fields...)
	}
}

// FormatWarnings writes the warnings of a run for `agencysync status`: a
// heading, then one line per warning, grouped by stream.
func FormatWarnings(w io.Writer, runID string, ws []Warning) error {
	var b strings.Builder
	if len(ws) == 0 {
		fmt.Fprintf(&b, "Warnings of the last run (%s): none\n", runID)
	} else {
		fmt.Fprintf(&b, "Warnings of the last run (%s): %d\n", runID, len(ws))
		width := 0
		for _, x := range ws {
			width = max(width, len(x.Stream))
		}
		for _, x := range ws {
			fmt.Fprintf(&b, "  %-*s  %-15s  %s\n", width, x.Stream, x.Kind, x.Message)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write warnings: %w", err)
	}
	return nil
}
