package fleet

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/serve"
)

//go:embed fleetpage.html
var fleetPageHTML string

var fleetPageTmpl = serve.ParsePage("fleet", fleetPageHTML)

// mux serves /healthz, /readyz, /metrics, the fleet view (/) and each
// agency's status page (/agencies/NAME, serve's page).
func (w *worker) mux() *http.ServeMux {
	mux := serve.HealthMux(func(ctx context.Context) error {
		if err := w.opts.Pool.Ping(ctx); err != nil {
			return fmt.Errorf("the job queue's database does not answer: %w", err)
		}
		return nil
	}, gatherer{w})
	mux.HandleFunc("GET /{$}", w.fleetPage)
	mux.HandleFunc("GET /agencies/{name}", w.agencyPage)
	return mux
}

// Report reads fleet status as this worker knows the agencies.
func (w *worker) Report(ctx context.Context) (*Report, error) {
	w.mu.Lock()
	list := make([]Agency, 0, len(w.agencies))
	for _, a := range w.agencies {
		list = append(list, a)
	}
	fileErr := w.fileErr
	w.mu.Unlock()
	sortAgencies(list)
	rep, err := report(ctx, w.client, w.opts.Agencies, w.set.Schema, list)
	if err != nil {
		return nil, err
	}
	rep.FileError = fileErr
	return rep, nil
}

// pageAgency is an agency as the fleet view shows it.
type pageAgency struct {
	AgencyStatus
	LastRunAt, NextRunAt, Quota, Lag string
}

func (w *worker) fleetPage(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	rep, err := w.Report(ctx)
	if err != nil {
		w.log.Error("fleet view: read the job queue", zap.Error(err))
		http.Error(rw, "fleet view unavailable: cannot read the job queue (see the log)", http.StatusServiceUnavailable)
		return
	}
	view := struct {
		*Report
		Worker, Generated string
		Agencies          []pageAgency
	}{Report: rep, Worker: w.set.WorkerID, Generated: rep.GeneratedAt.Format("2006-01-02 15:04:05 UTC")}
	for _, a := range rep.Agencies {
		p := pageAgency{AgencyStatus: a, NextRunAt: "—", Quota: "—", Lag: "—"}
		if a.LastRun != nil {
			p.LastRunAt = a.LastRun.StartedAt.UTC().Format("2006-01-02 15:04")
		}
		switch {
		case a.NextRun != nil:
			p.NextRunAt = a.NextRun.Format("2006-01-02 15:04")
		case a.State == StateHeld:
			p.NextRunAt = "when its key files change"
		}
		if a.QuotaDay != "" {
			p.Quota = fmt.Sprintf("%d (%d left)", a.QuotaSpent, a.QuotaLeft)
		}
		if a.LagSeconds != nil {
			p.Lag = (time.Duration(*a.LagSeconds) * time.Second).String()
		}
		view.Agencies = append(view.Agencies, p)
	}
	if err := serve.RenderPage(rw, fleetPageTmpl, view, "default-src 'none'; style-src 'unsafe-inline'", "fleet view"); err != nil {
		w.log.Error("fleet view: render", zap.Error(err))
	}
}

// agencyPage is serve's status page of one agency.
func (w *worker) agencyPage(rw http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, _, ok := w.agency(name); !ok {
		http.NotFound(rw, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	src, done, err := w.opts.Agencies.StatusPage(ctx, name)
	if err != nil {
		w.log.Error("status page: open the agency's warehouse", zap.String("agency", name), zap.Error(err))
		http.Error(rw, "status page unavailable: cannot open the agency's warehouse (see the log)", http.StatusServiceUnavailable)
		return
	}
	defer done()
	serve.NewStatusPage(src, serve.StatusPageOptions{Logger: w.log.With(zap.String("agency", name))}).ServeHTTP(rw, r)
}
