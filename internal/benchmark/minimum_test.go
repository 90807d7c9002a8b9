package benchmark

import (
	"maps"
	"testing"
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
