package benchmark

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
		{[]float64{5, nan, 1, 3}, 3},
		{[]float64{1.5, 1.5, 9}, 1.5},
	} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	for _, in := range [][]float64{nil, {}, {nan, nan}} {
		if got := Median(in); !math.IsNaN(got) {
			t.Errorf("Median(%v) = %v, want NaN", in, got)
		}
	}
	in := []float64{3, 1, 2}
	Median(in)
	if in[0] != 3 || in[1] != 1 || in[2] != 2 {
		t.Errorf("Median reordered its input: %v", in)
	}
}

func TestPairRatios(t *testing.T) {
	got := PairRatios([]float64{10, 9, 8, 100}, []float64{20, 0, 4})
	if len(got) != 3 || got[0] != 0.5 || !math.IsNaN(got[1]) || got[2] != 2 {
		t.Fatalf("PairRatios = %v, want [0.5 NaN 2]", got)
	}
	// Pair by pair, not median ÷ median: the runs' medians would say 1.
	if m := Median(PairRatios([]float64{1, 2, 10}, []float64{1, 4, 5})); m != 1 {
		t.Errorf("median of pair ratios = %v, want 1 (ratios 1, 0.5, 2)", m)
	}
	if r := Ratio(1, 0); !math.IsNaN(r) {
		t.Errorf("Ratio(1, 0) = %v, want NaN", r)
	}
}

func TestMinMax(t *testing.T) {
	lo, hi := MinMax([]float64{3, math.NaN(), -1, 8})
	if lo != -1 || hi != 8 {
		t.Errorf("MinMax = %v, %v, want -1, 8", lo, hi)
	}
	lo, hi = MinMax(nil)
	if !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("MinMax(nil) = %v, %v, want NaN, NaN", lo, hi)
	}
}
