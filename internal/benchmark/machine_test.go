package benchmark

import (
	"testing"
	"time"
)

func TestParseProc(t *testing.T) {
	cpuinfo := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13  64-Core Processor\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13  64-Core Processor\n"
	if got := parseCPUModel([]byte(cpuinfo)); got != "AMD EPYC 7B13 64-Core Processor" {
		t.Errorf("parseCPUModel = %q", got)
	}
	if got := parseCPUModel([]byte("processor: 0\n")); got != "unknown" {
		t.Errorf("parseCPUModel without a model = %q, want unknown", got)
	}
	if got := parseMemTotal([]byte("MemTotal:       24682564 kB\nMemFree:  100 kB\n")); got != 24682564*1024 {
		t.Errorf("parseMemTotal = %d", got)
	}
	if got := parseLoadAvg([]byte("1.25 0.80 0.61 2/345 12345\n")); got != "1.25 0.80 0.61" {
		t.Errorf("parseLoadAvg = %q", got)
	}
	if got := parseLoadAvg([]byte("")); got != "unknown" {
		t.Errorf("parseLoadAvg(empty) = %q", got)
	}
	if got := firstLoad("1.25 0.80 0.61"); got != 1.25 {
		t.Errorf("firstLoad = %v", got)
	}
	if got := firstLoad("unknown"); got != -1 {
		t.Errorf("firstLoad(unknown) = %v", got)
	}
}

func TestParseProcStatBusy(t *testing.T) {
	stat := "cpu  1000 50 300 9000 400 10 20 5 0 0\ncpu0 500 25 150 4500 200 5 10 2 0 0\n"
	got, err := parseProcStatBusy([]byte(stat))
	if err != nil || got != 13850*time.Millisecond { // (1000+50+300+10+20+5) ticks of 10 ms
		t.Errorf("parseProcStatBusy = %v, %v; want 13.85s", got, err)
	}
	if _, err := parseProcStatBusy([]byte("intr 1 2 3\n")); err == nil {
		t.Error("parseProcStatBusy without a cpu line: no error")
	}
}

func TestOtherCores(t *testing.T) {
	at := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	from := CPUSample{System: 100 * time.Second, Own: 10 * time.Second, At: at}
	to := CPUSample{System: 250 * time.Second, Own: 110 * time.Second, At: at.Add(100 * time.Second)}
	if got := OtherCores(from, to); got != 0.5 { // 150 s busy, 100 s ours, over 100 s
		t.Errorf("OtherCores = %v, want 0.5", got)
	}
	if got := OtherCores(to, to); got != 0 {
		t.Errorf("OtherCores over no time = %v, want 0", got)
	}
}

func TestParseProcPidStat(t *testing.T) {
	stat := "4242 (postgres: bench (x) ) S 4200 4200 4200 0 -1 4194560 1234 0 0 0 250 50 7 3 20 0 1 0 100 1000 10 18446744073709551615\n"
	st, err := parseProcPidStat([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != 4200 || st.own != 3*time.Second || st.children != 100*time.Millisecond {
		t.Errorf("parseProcPidStat = %+v, want ppid 4200, own 3s, children 100ms", st)
	}
	if _, err := parseProcPidStat([]byte("4242 (x) S 1 2")); err == nil {
		t.Error("parseProcPidStat of a short line: no error")
	}
}
