package benchmark

import (
	"maps"
	"slices"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// Minimum is the fewest requests that can sync an inventory completely
// (oracle.MinimumRequests, the one statement of that formula).
type Minimum = oracle.Minimum

// PageSize is the largest page the service answers (oracle.PageSize).
const PageSize = oracle.PageSize

// EndpointExcess lists, endpoint by endpoint in name order, the requests
// used beyond (positive) or short of (negative) the minimum; endpoints that
// match are left out.
func EndpointExcess(used map[string]int64, minimum map[string]int) map[string]int {
	out := map[string]int{}
	names := slices.Sorted(maps.Keys(minimum))
	for k := range used {
		if _, ok := minimum[k]; !ok {
			names = append(names, k)
		}
	}
	for _, k := range names {
		if d := int(used[k]) - minimum[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// keyedByEndpoint is the sandbox's count by endpoint of the requests sent
// with a key: the worker's clock probe at the start of every run is a
// keyless GET of the brands list (a 401, no quota), which the sandbox counts
// under brands and in Keyless, so Keyless is taken off brands.
func keyedByEndpoint(st sandbox.Stats) map[string]int64 {
	out := maps.Clone(st.ByEndpoint)
	if out == nil {
		out = map[string]int64{}
	}
	if st.Keyless > 0 {
		out["brands"] -= st.Keyless
		if out["brands"] == 0 {
			delete(out, "brands")
		}
	}
	return out
}
