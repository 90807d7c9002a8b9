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
	Runs            *prometheus.CounterVec   // agencysync_runs_total{status}: succeeded, warning, partial, failed, skipped
	NextRun         *prometheus.GaugeVec     // agencysync_next_run_timestamp_seconds{stream} (serve)
	OpenRejects     *prometheus.GaugeVec     // agencysync_open_rejects{stream}
	// SourceFieldWarnings counts the coverage warnings of the last run that
	// synced each stream of the field inventory, by kind:
	// agencysync_source_field_warnings{stream,kind} (inventory.SetWarnings).
	SourceFieldWarnings *prometheus.GaugeVec
}

// New creates the series and registers them with reg (nil: not
// registered, e.g. for a one-shot run).
func New(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: counterVec("agencysync_requests_total",
			"Requests sent to the Agency Data Service, by endpoint and HTTP status (0: no response).", "endpoint", "status"),
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
		RowsWritten: counterVec("agencysync_rows_written_total",
			"Warehouse rows inserted, updated or soft-deleted, by table.", "table"),
		Rejected: counterVec("agencysync_rejected_records_total",
			"Records that could not be loaded, by stream.", "stream"),
		LastSuccess: gaugeVec("agencysync_last_success_timestamp_seconds",
			"Unix time of the last complete sync of each stream.", "stream"),
		RunDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "agencysync_run_duration_seconds", Help: "Duration of sync runs, by final status.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}, []string{"status"}),
		Runs: counterVec("agencysync_runs_total", "Sync runs, by final status.", "status"),
		NextRun: gaugeVec("agencysync_next_run_timestamp_seconds",
			"Unix time of the next scheduled sync of each stream (serve).", "stream"),
		OpenRejects: gaugeVec("agencysync_open_rejects",
			"Rejected records of each stream still open (rejected_records) after its last run; any makes a run end warning.", "stream"),
		SourceFieldWarnings: inventory.NewWarningsGauge(nil),
	}
	if reg != nil {
		reg.MustRegister(m.Requests, m.RequestDuration, m.Retries, m.QuotaSpent, m.QuotaLeft,
			m.RowsWritten, m.Rejected, m.LastSuccess, m.RunDuration, m.Runs, m.NextRun, m.OpenRejects, m.SourceFieldWarnings)
	}
	return m
}

// counterVec declares a counter with labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// gaugeVec declares a gauge with labels.
func gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}
