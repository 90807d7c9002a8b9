package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestFormats(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := New(&buf, "info", "auto")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("hidden")
	log.Info("hello", zap.String("stream", "brands"))
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
		t.Fatalf("auto off a terminal is not JSON: %q", buf.String())
	}
	if line["msg"] != "hello" || line["stream"] != "brands" || line["level"] != "info" {
		t.Fatalf("line = %v", line)
	}
	buf.Reset()
	log, err = New(&buf, "debug", "console")
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("shown")
	if !strings.Contains(buf.String(), "shown") || strings.HasPrefix(buf.String(), "{") {
		t.Fatalf("console output = %q", buf.String())
	}
	if _, err := New(&buf, "loud", "json"); err == nil {
		t.Fatal("bad level accepted")
	}
	if _, err := New(&buf, "info", "xml"); err == nil {
		t.Fatal("bad format accepted")
	}
}
