package benchmark

import (
	"slices"
	"time"
)

// Spacing is how far apart the worker started its requests, from its debug
// log: the mean interval before each request, for the communications pages
// and for every other request (lists and details).
type Spacing struct {
	Comms, Other       time.Duration
	NComms, NOther     int
	FirstAfterStart    time.Duration // from "sync started" to the first request
	LastToSummary      time.Duration // from the last request's start to the "sync summary"
	CommsRequestMedian time.Duration // median duration of a communications request
}

// RequestSpacing reads agencysync's JSON log at debug level: each "request"
// line (logged when the answer came) has its time and duration, so the
// request started at ts − duration.
func RequestSpacing(log []byte) Spacing {
	type req struct {
		start time.Time
		comms bool
		dur   time.Duration
	}
	var reqs []req
	var started, summary time.Time
	for l := range logLines(log) {
		switch l.Msg {
		case "sync started":
			started = l.TS
		case "sync summary":
			summary = l.TS
		case "request":
			reqs = append(reqs, req{start: l.start(), comms: l.Endpoint == "communications", dur: l.took()})
		}
	}
	var s Spacing
	if len(reqs) == 0 {
		return s
	}
	slices.SortFunc(reqs, func(a, b req) int { return a.start.Compare(b.start) })
	var comms, other time.Duration
	var durs []time.Duration
	for i, r := range reqs {
		if r.comms {
			durs = append(durs, r.dur)
		}
		if i == 0 {
			continue
		}
		gap := r.start.Sub(reqs[i-1].start)
		if r.comms {
			comms += gap
			s.NComms++
		} else {
			other += gap
			s.NOther++
		}
	}
	if s.NComms > 0 {
		s.Comms = comms / time.Duration(s.NComms)
	}
	if s.NOther > 0 {
		s.Other = other / time.Duration(s.NOther)
	}
	if len(durs) > 0 {
		slices.Sort(durs)
		s.CommsRequestMedian = durs[len(durs)/2]
	}
	if !started.IsZero() {
		s.FirstAfterStart = reqs[0].start.Sub(started)
	}
	if !summary.IsZero() {
		s.LastToSummary = summary.Sub(reqs[len(reqs)-1].start)
	}
	return s
}
