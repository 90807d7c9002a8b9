// Package metrics declares the Prometheus series agencysync exposes on
// /metrics. The engine and serve set them; the names are a contract of the
// Grafana dashboard in deploy/.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agencysync/agencysync/inventory"
)

// Metrics are the Prometheus series agencysync exposes on /metrics. Names are
// a contract of the Grafana dashboard in deploy/.
type Metrics struct {
	Requests        *prometheus.CounterVec   // agencysync_requests_total{endpoint,status}
	RequestDuration *prometheus.HistogramVec // agencysync_request_duration_seconds{endpoint}
	Retries         prometheus.Counter       // agencysync_request_retries_total
	QuotaSpent      prometheus.Gauge         // agencysync_quota_spent_requests
	QuotaLeft       prometheus.Gauge         // agencysync_quota_left_requests
	RowsWritten     *prometheus.CounterVec   // agencysync_rows_written_total{table}
	Rejected        *prometheus.CounterVec   // agencysync_rejected_records_total{stream}
	LastSuccess     *prometheus.GaugeVec     // agencysync_last_success_timestamp_seconds{stream}
	RunDuration     *prometheus.HistogramVec // agencysync_run_duration_seconds{status}
	Runs            *prometheus.CounterVec   // agencysync_runs_total{status}
	NextRun         *prometheus.GaugeVec     // agencysync_next_run_timestamp_seconds{stream} (serve)
	// SourceFieldWarnings counts the coverage warnings of the last run that
	// synced each stream of the field inventory, by kind:
	// agencysync_source_field_warnings{stream,kind} (inventory.SetWarnings).
	SourceFieldWarnings *prometheus.GaugeVec
}

// New creates the series and registers them with reg (nil: not
// registered, e.g. for a one-shot run).
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agencysync_requests_total", Help: "Requests sent to the Agency Data Service, by endpoint and HTTP status (0: no response).",
		}, []string{"endpoint", "status"}),
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agencysync_request_duration_seconds", Help: "Duration of requests to the Agency Data Service.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 10),
		}, []string{"endpoint"}),
		Retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "agencysync_request_retries_total", Help: "Requests that retried a failed attempt.",
		}),
		QuotaSpent: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agencysync_quota_spent_requests", Help: "Requests spent today (quota day) according to the ledger.",
		}),
		QuotaLeft: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "agencysync_quota_left_requests", Help: "Requests left today after the reserve for other users of the key.",
		}),
		RowsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agencysync_rows_written_total", Help: "Warehouse rows inserted, updated or soft-deleted, by table.",
		}, []string{"table"}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agencysync_rejected_records_total", Help: "Records that could not be loaded, by stream.",
		}, []string{"stream"}),
		LastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agencysync_last_success_timestamp_seconds", Help: "Unix time of the last complete sync of each stream.",
		}, []string{"stream"}),
		RunDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agencysync_run_duration_seconds", Help: "Duration of sync runs, by final status.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"status"}),
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agencysync_runs_total", Help: "Sync runs, by final status.",
		}, []string{"status"}),
		NextRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agencysync_next_run_timestamp_seconds", Help: "Unix time of the next scheduled sync of each stream (serve).",
		}, []string{"stream"}),
		SourceFieldWarnings: inventory.NewWarningsGauge(nil),
	}
	if reg != nil {
		reg.MustRegister(m.Requests, m.RequestDuration, m.Retries, m.QuotaSpent, m.QuotaLeft,
			m.RowsWritten, m.Rejected, m.LastSuccess, m.RunDuration, m.Runs, m.NextRun, m.SourceFieldWarnings)
	}
	return m
}
