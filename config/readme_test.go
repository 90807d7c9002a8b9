package config

import (
	"os"
	"strings"
	"testing"
)

// configDoc is the configuration reference that embeds the table.
const configDoc = "../docs/configuration.md"

const (
	beginMarker = "<!-- config:begin (generated from config.Config; UPDATE_README=1 go test ./config) -->\n"
	endMarker   = "<!-- config:end -->"
)

// TestReadmeConfigTable keeps the configuration reference's table
// (docs/configuration.md) equal to the Config struct. Run with
// UPDATE_README=1 to rewrite it.
func TestReadmeConfigTable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	start := strings.Index(readme, beginMarker)
	end := strings.Index(readme, endMarker)
	if start < 0 || end < start {
		t.Fatalf(configDoc+" lacks the markers %q … %q", beginMarker, endMarker)
	}
	got := readme[start+len(beginMarker) : end]
	want := MarkdownTable()
	if got == want {
		return
	}
	if os.Getenv("UPDATE_README") == "1" {
		updated := readme[:start+len(beginMarker)] + want + readme[end:]
		if err := os.WriteFile(configDoc, []byte(updated), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf(configDoc+" configuration table is stale; run UPDATE_README=1 go test ./config -run TestReadmeConfigTable\nwant:\n%s", want)
}
