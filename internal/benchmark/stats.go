package benchmark

import (
	"math"
	"slices"
)

// Median returns the median of the values that are not NaN: the middle one
// of an odd count, the mean of the two middle ones of an even count. It
// returns NaN when no value is left.
func Median(xs []float64) float64 {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// Ratio returns num ÷ den, or NaN when den is zero or either is NaN.
func Ratio(num, den float64) float64 {
	if den == 0 || math.IsNaN(num) || math.IsNaN(den) {
		return math.NaN()
	}
	return num / den
}

// PairRatios divides num[i] by den[i] for every i that both slices have:
// the ratios of measurements taken pair by pair within a run. A pair with a
// zero denominator gives NaN, which Median ignores.
func PairRatios(num, den []float64) []float64 {
	n := min(len(num), len(den))
	out := make([]float64, n)
	for i := range n {
		out[i] = Ratio(num[i], den[i])
	}
	return out
}

// MinMax returns the smallest and the largest value that are not NaN (NaN,
// NaN when there is none).
func MinMax(xs []float64) (lo, hi float64) {
	lo, hi = math.NaN(), math.NaN()
	for _, x := range xs {
		if math.IsNaN(x) {
			continue
		}
		if math.IsNaN(lo) || x < lo {
			lo = x
		}
		if math.IsNaN(hi) || x > hi {
			hi = x
		}
	}
	return lo, hi
}
