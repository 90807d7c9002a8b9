package warehouse

import (
	"context"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

// DownPreview is what `migrate down` would roll back: the newest applied
// migration and the objects its Down section drops.
type DownPreview struct {
	// Version and File name the migration; File is empty when none is applied.
	Version int64
	File    string
	// Drops lists the Down section's DROP and ALTER … DROP targets, e.g.
	// "TABLE service_clock".
	Drops []string
}

var dropRE = regexp.MustCompile(`(?i)\bDROP\s+(MATERIALIZED\s+VIEW|TABLE|VIEW|INDEX|FUNCTION|TYPE|COLUMN|CONSTRAINT|TRIGGER|SEQUENCE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?([A-Za-z0-9_."]+(?:\s*,\s*[A-Za-z0-9_."]+)*)`)

// DownPreview reads which migration Down would roll back and what its Down
// section drops, without changing anything.
func (m *Migrator) DownPreview(ctx context.Context) (DownPreview, error) {
	st, err := m.Status(ctx)
	if err != nil {
		return DownPreview{}, err
	}
	var p DownPreview
	for _, s := range st {
		if s.Applied && s.Version >= p.Version {
			p.Version, p.File = s.Version, s.File
		}
	}
	if p.File == "" {
		return p, nil
	}
	raw, err := fs.ReadFile(m.fsys, p.File)
	if err != nil {
		return p, fmt.Errorf("read migration %s: %w", p.File, err)
	}
	_, down, _ := strings.Cut(string(raw), "-- +goose Down")
	for _, line := range strings.Split(down, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		for _, mm := range dropRE.FindAllStringSubmatch(line, -1) {
			kind := strings.ToUpper(strings.Join(strings.Fields(mm[1]), " "))
			for name := range strings.SplitSeq(mm[2], ",") {
				p.Drops = append(p.Drops, kind+" "+strings.TrimSpace(name))
			}
		}
	}
	return p, nil
}
