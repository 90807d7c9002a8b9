package fleet

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestKeyStamp: the stamp changes with any key file's contents, is the same
// for the same contents, differs between agencies, and holds no key.
func TestKeyStamp(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "api"), filepath.Join(dir, "comms")
	write := func(p, v string) {
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "key-aaaaaaaaaaaaaaaa")
	write(b, "key-bbbbbbbbbbbbbbbb")
	s1 := keyStamp("acme", []string{a, b})
	if s1 != keyStamp("acme", []string{a, b}) {
		t.Error("the same contents give another stamp")
	}
	if s1 == keyStamp("globex", []string{a, b}) {
		t.Error("two agencies share a stamp")
	}
	write(b, "key-cccccccccccccccc")
	if s1 == keyStamp("acme", []string{a, b}) {
		t.Error("a changed key file keeps the stamp")
	}
	for _, k := range []string{"key-aaaaaaaaaaaaaaaa", "key-bbbbbbbbbbbbbbbb", "aaaaaaaa", "bbbbbbbb"} {
		if strings.Contains(s1, k) {
			t.Errorf("the stamp %s holds %s", s1, k)
		}
	}
	if len(s1) != 24 {
		t.Errorf("stamp %q: want 24 hex digits", s1)
	}
}

// TestScheduleInItsZone: SYNC_SCHEDULE runs in the agency's zone.
func TestScheduleInItsZone(t *testing.T) {
	loc, err := time.LoadLocation("Europe/Bucharest")
	if err != nil {
		t.Skip(err)
	}
	s, err := parseSchedule("0 2 * * *", loc)
	if err != nil {
		t.Fatal(err)
	}
	got := s.Next(time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 1, 11, 0, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("next %s, want %s (02:00 in Bucharest)", got.UTC(), want)
	}
	if _, err := parseSchedule("every day", nil); err == nil {
		t.Error("a bad expression was accepted")
	}
}

func jobRow(state rivertype.JobState, h hold, by ...string) *rivertype.JobRow {
	out, _ := json.Marshal(map[string]any{"output": h})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &rivertype.JobRow{ID: 7, State: state, Metadata: out, AttemptedBy: by, AttemptedAt: &at, ScheduledAt: at.Add(time.Hour),
		EncodedArgs: []byte(`{"agency":"a"}`)}
}

// TestJobState: what each job state and hold shows in fleet status.
func TestJobState(t *testing.T) {
	a := Agency{Name: "a", Schedule: "0 2 * * *", Location: time.UTC, KeyFiles: []string{"/run/secrets/a/api"}}
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name         string
		job          *rivertype.JobRow
		state, hold  string
		worker, next string
	}{
		{"no job", nil, StateIdle, "", "", "2026-01-03T02:00:00Z"},
		{"running", jobRow(rivertype.JobStateRunning, hold{}, "w1", "w2"), StateRunning, "", "w2", ""},
		{"queued", jobRow(rivertype.JobStateAvailable, hold{}), StateQueued, "", "", "2026-01-02T04:04:05Z"},
		{"short quota snooze", jobRow(rivertype.JobStateAvailable, hold{Reason: holdQuota}), StateWaiting, holdQuota, "", "2026-01-02T04:04:05Z"},
		{"quota", jobRow(rivertype.JobStateScheduled, hold{Reason: holdQuota}), StateWaiting, holdQuota, "", "2026-01-02T04:04:05Z"},
		{"refused key", jobRow(rivertype.JobStateScheduled, hold{Reason: holdCredentials, Note: "refused"}), StateHeld, holdCredentials, "", ""},
		{"retrying", jobRow(rivertype.JobStateRetryable, hold{}, "w3"), StateRetrying, "", "w3", "2026-01-02T04:04:05Z"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var st AgencyStatus
			jobState(&st, c.job, a, now)
			next := ""
			if st.NextRun != nil {
				next = st.NextRun.Format(time.RFC3339)
			}
			if st.State != c.state || st.Hold != c.hold || st.Worker != c.worker || next != c.next {
				t.Errorf("state %s hold %q worker %q next %q; want %s %q %q %q", st.State, st.Hold, st.Worker, next, c.state, c.hold, c.worker, c.next)
			}
			if c.state == StateHeld && (len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "/run/secrets/a/api")) {
				t.Errorf("a held agency's warnings %v: want one naming its key files", st.Warnings)
			}
		})
	}
}

// TestSlogToZap: River's lines reach zap with their attributes; its info
// lines are debug.
func TestSlogToZap(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := newSlog(zap.New(core)).With("client_id", "w1").WithGroup("job")
	l.Warn("job failed", "id", 3)
	l.Info("leadership gained")
	all := logs.All()
	if len(all) != 2 || all[0].Level != zapcore.WarnLevel || all[1].Level != zapcore.DebugLevel {
		t.Fatalf("entries %+v", all)
	}
	m := all[0].ContextMap()
	if m["client_id"] != "w1" || m["job.id"] != int64(3) || m["component"] != "river" {
		t.Errorf("fields %v", m)
	}
	quiet, _ := observer.New(zapcore.WarnLevel)
	if newSlog(zap.New(quiet)).Enabled(t.Context(), slog.LevelInfo) {
		t.Error("info is enabled on a warn logger")
	}
}
