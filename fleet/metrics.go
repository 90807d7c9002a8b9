package fleet

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/metrics"
)

// instruments are one agency's series (metrics.Metrics, the engine's) in
// their own registry, kept while the agency is in FLEET_FILE: /metrics
// shows them labelled agency.
type instruments struct {
	reg     *prometheus.Registry
	metrics *metrics.Metrics
}

// instruments returns the agency's series, made on first use.
func (w *worker) instruments(name string) *instruments {
	w.mu.Lock()
	defer w.mu.Unlock()
	in, ok := w.inst[name]
	if !ok {
		reg := prometheus.NewRegistry()
		in = &instruments{reg: reg, metrics: metrics.New(reg)}
		w.inst[name] = in
	}
	return in
}

// dropInstruments forgets the series of an agency removed from FLEET_FILE.
func (w *worker) dropInstruments(name string) {
	w.mu.Lock()
	delete(w.inst, name)
	w.mu.Unlock()
	w.met.running.DeleteLabelValues(name)
}

// setNextRun sets the agency's next scheduled sync (every stream: a fleet
// syncs an agency whole).
func (w *worker) setNextRun(name string, s *schedule) {
	if s == nil {
		return
	}
	next := float64(s.Next(time.Now()).Unix())
	for _, st := range engine.AllStreams {
		w.instruments(name).metrics.NextRun.WithLabelValues(st).Set(next)
	}
}

// fleetMetrics are the fleet's own series.
type fleetMetrics struct {
	agencies prometheus.Gauge
	running  *prometheus.GaugeVec
	outcomes *prometheus.CounterVec
	reloads  *prometheus.CounterVec
}

func newFleetMetrics(reg prometheus.Registerer) *fleetMetrics {
	m := &fleetMetrics{
		agencies: prometheus.NewGauge(prometheus.GaugeOpts{Name: "agencysync_fleet_agencies",
			Help: "Agencies in FLEET_FILE as this worker read it last."}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "agencysync_fleet_sync_running",
			Help: "1 while this worker syncs the agency."}, []string{"agency"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agencysync_fleet_jobs_total",
			Help: "Sync jobs this worker ended, by agency and outcome (succeeded, resumed, wait_quota, wait_credentials, wait_locked, wait_incomplete, wait_fleet_file, failed, cancelled)."},
			[]string{"agency", "outcome"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agencysync_fleet_file_reads_total",
			Help: "Readings of FLEET_FILE that changed the agencies (changed) or failed (error)."}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.agencies, m.running, m.outcomes, m.reloads)
	}
	return m
}

func (m *fleetMetrics) outcome(agency, outcome string) {
	m.outcomes.WithLabelValues(agency, outcome).Inc()
}

// gatherer is /metrics: the worker's own series and every agency's,
// labelled agency.
type gatherer struct{ w *worker }

func (g gatherer) Gather() ([]*dto.MetricFamily, error) {
	var own []*dto.MetricFamily
	if g.w.opts.Registry != nil {
		var err error
		if own, err = g.w.opts.Registry.Gather(); err != nil {
			return nil, err
		}
	}
	g.w.mu.Lock()
	regs := maps.Clone(g.w.inst)
	g.w.mu.Unlock()
	byName := map[string]*dto.MetricFamily{}
	for _, f := range own {
		byName[f.GetName()] = f
	}
	for _, name := range slices.Sorted(maps.Keys(regs)) {
		fams, err := regs[name].reg.Gather()
		if err != nil {
			return nil, err
		}
		for _, f := range fams {
			merged, ok := byName[f.GetName()]
			if !ok {
				merged = &dto.MetricFamily{Name: f.Name, Help: f.Help, Type: f.Type}
				byName[f.GetName()] = merged
			}
			for _, m := range f.Metric {
				m.Label = append(m.Label, &dto.LabelPair{Name: ptr("agency"), Value: ptr(name)})
				slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return cmp.Compare(a.GetName(), b.GetName()) })
				merged.Metric = append(merged.Metric, m)
			}
		}
	}
	out := make([]*dto.MetricFamily, 0, len(byName))
	for _, k := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[k])
	}
	return out, nil
}

func ptr(s string) *string { return &s }
