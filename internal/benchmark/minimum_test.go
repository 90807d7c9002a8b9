package benchmark

import (
	"maps"
	"testing"

	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

func TestEndpointExcess(t *testing.T) {
	used := map[string]int64{"brands": 1, "communications": 1003, "project_detail": 598, "unknown": 2}
	minimum := map[string]int{"brands": 1, "communications": 1000, "project_detail": 600, "summary": 1}
	got := EndpointExcess(used, minimum)
	want := map[string]int{"communications": 3, "project_detail": -2, "summary": -1, "unknown": 2}
	if !maps.Equal(got, want) {
		t.Errorf("EndpointExcess = %v, want %v", got, want)
	}
}

// TestKeyedByEndpointLeavesTheClockProbesOut: the keyless clock probes
// (brands, 401) are taken off the brands count, so that a first sync's
// requests by endpoint compare with the minimum as before the probe.
func TestKeyedByEndpointLeavesTheClockProbesOut(t *testing.T) {
	cases := []struct {
		name string
		st   sandbox.Stats
		want map[string]int64
	}{
		{"first sync, one probe", sandbox.Stats{Requests: 1605, Keyless: 1,
			ByEndpoint: map[string]int64{"brands": 2, "projects": 2, "communications": 1000, "project_detail": 600}},
			map[string]int64{"brands": 1, "projects": 2, "communications": 1000, "project_detail": 600}},
		{"communications run, probe only on brands", sandbox.Stats{Requests: 3, Keyless: 1,
			ByEndpoint: map[string]int64{"brands": 1, "communications": 2}},
			map[string]int64{"communications": 2}},
		{"no probe (an old worker)", sandbox.Stats{Requests: 2, ByEndpoint: map[string]int64{"brands": 2}},
			map[string]int64{"brands": 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := keyedByEndpoint(c.st)
			if !maps.Equal(got, c.want) {
				t.Errorf("keyedByEndpoint = %v, want %v", got, c.want)
			}
			if c.st.ByEndpoint["brands"] == c.want["brands"] && c.st.Keyless > 0 {
				t.Errorf("the input was changed: %v", c.st.ByEndpoint)
			}
		})
	}
}
