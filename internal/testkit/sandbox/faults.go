package sandbox

import (
	"context"
	"net/http"
	"time"
)

// Fault kinds as named in the stats.
const (
	faultName500      = "500"
	faultName502      = "502_html"
	faultName503      = "503"
	faultNameTruncate = "truncate"
	faultNameSlow     = "slow"
	faultNameDrop     = "drop"
	faultName429      = "429"
)

// pick chooses at most one fault for the uniform draw u in [0, 1): the rates
// are laid end to end in a fixed order.
func (f Faults) pick(u float64) string {
	for _, c := range []struct {
		rate float64
		name string
	}{
		{f.Err500, faultName500}, {f.HTML502, faultName502}, {f.Err503, faultName503},
		{f.Truncate, faultNameTruncate}, {f.Slow, faultNameSlow}, {f.Drop, faultNameDrop},
		{f.Spurious429, faultName429},
	} {
		if u < c.rate {
			return c.name
		}
		u -= c.rate
	}
	return ""
}

// faultConfig is the part of the options that can change at run time.
type faultConfig struct {
	faults    Faults
	latency   time.Duration
	jitter    time.Duration
	slowDelay time.Duration
	badRate   float64
}

// FaultSettings is the JSON form of the run-time fault configuration
// (GET/POST /_sandbox/faults). In a POST, absent keys keep their value.
// Durations are Go duration strings such as "250ms".
type FaultSettings struct {
	Err500        *float64 `json:"fault_500,omitempty"`
	HTML502       *float64 `json:"fault_502_html,omitempty"`
	Err503        *float64 `json:"fault_503,omitempty"`
	Truncate      *float64 `json:"fault_truncate,omitempty"`
	Slow          *float64 `json:"fault_slow,omitempty"`
	Drop          *float64 `json:"fault_drop,omitempty"`
	Spurious429   *float64 `json:"fault_429,omitempty"`
	Latency       *string  `json:"latency,omitempty"`
	Jitter        *string  `json:"jitter,omitempty"`
	SlowDelay     *string  `json:"slow_delay,omitempty"`
	BadRecordRate *float64 `json:"bad_record_rate,omitempty"`
}

func (c faultConfig) settings() FaultSettings {
	f := c.faults
	ptr := func(v float64) *float64 { return &v }
	str := func(d time.Duration) *string { s := d.String(); return &s }
	return FaultSettings{
		Err500: ptr(f.Err500), HTML502: ptr(f.HTML502), Err503: ptr(f.Err503),
		Truncate: ptr(f.Truncate), Slow: ptr(f.Slow), Drop: ptr(f.Drop), Spurious429: ptr(f.Spurious429),
		Latency: str(c.latency), Jitter: str(c.jitter), SlowDelay: str(c.slowDelay),
		BadRecordRate: ptr(c.badRate),
	}
}

// sleepCtx waits d or until ctx ends; it reports whether d elapsed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

const html502 = `<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx</center>
</body>
</html>
`

// dropConnection closes the client's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	// Without a hijackable connection (HTTP/2, recorders) abort the handler:
	// net/http then closes the stream without writing a response.
	panic(http.ErrAbortHandler)
}
