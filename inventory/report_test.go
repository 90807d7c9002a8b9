package inventory

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

var sampleWarnings = []Warning{
	{Kind: KindRejectedStream, Stream: "communications", Records: 25, Count: 25, Share: 1,
		Reason:  "users.from[].last_name: want a string, got false",
		Message: "25 of 25 communications records were rejected, most (25) because: users.from[].last_name: want a string, got false"},
	{Kind: KindNullColumn, Stream: "projects", Column: "projects.name", Field: "name", Records: 32, Count: 32, Share: 1,
		Candidates: []string{"title"}, Message: "projects.name is empty (NULL) in 32 of 32 projects records"},
	{Kind: KindNullColumn, Stream: "projects", Column: "projects.status", Field: "status", Records: 32, Count: 32, Share: 1,
		Candidates: []string{"state"}, Message: "projects.status is empty (NULL) in 32 of 32 projects records"},
	{Kind: KindNewField, Stream: "projects", Field: "custom_fields", Count: 4, Message: "new field custom_fields (array) in projects records, seen in 4"},
}

func TestSetWarnings(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := NewWarningsGauge(reg)
	SetWarnings(g, []string{"projects", "communications", "brands"}, sampleWarnings)
	for _, tc := range []struct {
		stream string
		kind   Kind
		want   float64
	}{
		{"projects", KindNullColumn, 2}, {"projects", KindNewField, 1}, {"projects", KindRejectedStream, 0},
		{"communications", KindRejectedStream, 1}, {"brands", KindNullColumn, 0},
	} {
		if got := testutil.ToFloat64(g.WithLabelValues(tc.stream, string(tc.kind))); got != tc.want {
			t.Errorf("%s/%s = %v, want %v", tc.stream, tc.kind, got, tc.want)
		}
	}
	// The next run of projects fixed the mapping: its warnings go to 0; the
	// streams it did not sync keep theirs.
	SetWarnings(g, []string{"projects"}, nil)
	if got := testutil.ToFloat64(g.WithLabelValues("projects", string(KindNullColumn))); got != 0 {
		t.Errorf("projects null_column after a clean run = %v", got)
	}
	if got := testutil.ToFloat64(g.WithLabelValues("communications", string(KindRejectedStream))); got != 1 {
		t.Errorf("communications kept %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, WarningsMetric); err != nil || n != 3*len(AllKinds) {
		t.Errorf("series %d, %v", n, err)
	}
}

func TestLogWarnings(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	LogWarnings(zap.New(core), sampleWarnings)
	entries := logs.All()
	if len(entries) != len(sampleWarnings) {
		t.Fatalf("%d lines", len(entries))
	}
	name := entries[1].ContextMap()
	if entries[1].Level != zapcore.WarnLevel || entries[1].Message != sampleWarnings[1].Message ||
		name["stream"] != "projects" || name["column"] != "projects.name" || name["field"] != "name" {
		t.Fatalf("line %+v %v", entries[1].Entry, name)
	}
	if c, ok := name["candidates"].([]interface{}); !ok || len(c) != 1 || c[0] != "title" {
		t.Fatalf("candidates %#v", name["candidates"])
	}
	if r := entries[0].ContextMap()["reason"]; r != sampleWarnings[0].Reason {
		t.Fatalf("reason %v", r)
	}
	if _, ok := entries[3].ContextMap()["share"]; ok {
		t.Fatal("a new field has no share")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestFormatWarnings(t *testing.T) {
	var b bytes.Buffer
	if err := FormatWarnings(&b, "run-1", sampleWarnings); err != nil {
		t.Fatal(err)
	}
	want := "Warnings of the last run (run-1): 4\n" +
		"  communications  rejected_stream  " + sampleWarnings[0].Message + "\n" +
		"  projects        null_column      " + sampleWarnings[1].Message + "\n" +
		"  projects        null_column      " + sampleWarnings[2].Message + "\n" +
		"  projects        new_field        " + sampleWarnings[3].Message + "\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := FormatWarnings(&b, "run-2", nil); err != nil || b.String() != "Warnings of the last run (run-2): none\n" {
		t.Fatalf("%q %v", b.String(), err)
	}
	if err := FormatWarnings(failWriter{}, "run-3", nil); err == nil || !strings.Contains(err.Error(), "write warnings") {
		t.Fatalf("error %v", err)
	}
}
