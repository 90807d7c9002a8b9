package benchmark

import (
	"maps"
	"slices"

	"github.com/agencysync/agencysync/internal/testkit/oracle"
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
