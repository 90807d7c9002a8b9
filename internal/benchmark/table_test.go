package benchmark

import (
	"math"
	"strings"
	"testing"
)

func TestInt(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1 000", 20000: "20 000",
		1_000_000: "1 000 000", -1234567: "-1 234 567", 123456: "123 456"} {
		if got := Int(n); got != want {
			t.Errorf("Int(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestFloat(t *testing.T) {
	for _, c := range []struct {
		x    float64
		d    int
		want string
	}{
		{1.0049, 2, "1.00"}, {1.056, 2, "1.06"}, {12345.678, 1, "12 345.7"}, {0.5, 3, "0.500"},
		{-2500.25, 1, "-2 500.2"}, {-0.0001, 2, "0.00"}, {999.96, 1, "1 000.0"}, {math.NaN(), 2, "n/a"}, {42, 0, "42"},
	} {
		if got := Float(c.x, c.d); got != c.want {
			t.Errorf("Float(%v, %d) = %q, want %q", c.x, c.d, got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		n    float64
		want string
	}{
		{512, "512 B"}, {2048, "2.0 KiB"}, {330240, "322.5 KiB"}, {12.5 * (1 << 20), "12.5 MiB"}, {3 << 30, "3.00 GiB"},
		{math.NaN(), "n/a"},
	} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%v) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	if Check(1, true) != Met || Check(1, false) != Missed || Check(math.NaN(), true) != Failed {
		t.Error("Check: want Met, Missed, Failed")
	}
}

func TestTable(t *testing.T) {
	got := Table([]Row{
		{ID: "1", Figure: "Request efficiency", Result: "1.00 (1 707 / 1 707)", Target: "1.00", Verdict: Met, Detail: "a | b\nc"},
		{ID: "7", Figure: "Decode", Result: "82 pages/s", Verdict: Info},
	})
	want := "| # | figure | result (median) | target | met | details |\n" +
		"|---|---|---|---|---|---|\n" +
		"| 1 | Request efficiency | 1.00 (1 707 / 1 707) | 1.00 | yes | a \\| b c |\n" +
		"| 7 | Decode | 82 pages/s | — | — |  |\n"
	if got != want {
		t.Errorf("Table =\n%s\nwant\n%s", got, want)
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); n != 7 {
			t.Errorf("line %q has %d cell separators, want 7", line, n)
		}
	}
}

func TestList(t *testing.T) {
	if got := List([]float64{1, 2.5}, func(x float64) string { return Float(x, 1) }); got != "1.0 / 2.5" {
		t.Errorf("List = %q", got)
	}
}

func TestSortRows(t *testing.T) {
	rows := sortRows([]Row{{ID: "7", Figure: "a"}, {ID: "3"}, {ID: "1"}, {ID: "7", Figure: "b"}, {ID: "x"}})
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID+r.Figure)
	}
	if got := strings.Join(ids, ","); got != "1,3,7a,7b,x" {
		t.Errorf("sortRows order = %s, want 1,3,7a,7b,x", got)
	}
}

func TestReportBusy(t *testing.T) {
	for _, c := range []struct {
		other float64
		load  string
		busy  bool
		note  string
	}{
		{0.05, "0.30 0.2 0.1", false, ""},
		{0.05, "5.49 5.58 4.82", false, "jobs that had just ended"},
		{0.60, "0.30 0.2 0.1", true, "The machine was busy"},
		{-1, "2.00 1 1", true, "The machine was busy"},
		{-1, "1.00 1 1", false, ""},
	} {
		r := &Report{OtherCores: c.other, Machine: Machine{LoadStart: c.load, Cores: 2}}
		if r.Busy() != c.busy {
			t.Errorf("other %v, load %s: Busy = %v, want %v", c.other, c.load, r.Busy(), c.busy)
		}
		if note := r.busyNote(); (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("other %v, load %s: note %q, want one with %q", c.other, c.load, note, c.note)
		}
	}
}
