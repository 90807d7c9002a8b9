package config

import (
	"context"
	"testing"
)

// BenchmarkLoadFrom is what every command pays at start: a complete
// configuration, field map file included, parsed, defaulted and checked.
func BenchmarkLoadFrom(b *testing.B) {
	vars := map[string]string{
		"DATABASE_URL": "postgres://u:pw@db:5432/w", "WAREHOUSE_SCHEMA": "agency",
		"AGENCY_BASE_URL": "https://api.agency.example", "AGENCY_API_KEY": "k-main-0123456789",
		"AGENCY_COMMS_URL": "https://wf.agency.example", "AGENCY_COMMS_KEY": "k-comms-0123456789",
		"AGENCY_COMMS_DOMAIN_ID": "7", "AGENCY_COMMS_USER_IDS": "1-300,412", "AGENCY_COMMS_START_DATE": "2024-01-31",
		"SYNC_STREAM_SCHEDULES": "communications=0 * * * *;finance=30 7,19 * * *",
		"SYNC_PRIORITIES":       "communications-increment,finance,brands,projects,details,communications-backfill,verify",
		"AGENCY_PATHS":          "brand_contacts=/v1/clients/{id}/people",
		"AGENCY_FIELD_MAP":      "projects.status=status_label", "AGENCY_FIELD_MAP_FILE": "/f.yaml",
	}
	env := Environment{Lookup: env(vars), ReadFile: files(map[string]string{"/f.yaml": renamedProjectsYAML}), Geteuid: func() int { return 1000 }}
	b.ReportAllocs()
	for b.Loop() {
		cfg, err := LoadFrom(context.Background(), env, testKnown)
		if err != nil || len(cfg.FieldMap) != 5 || len(cfg.Schedules) != 3 {
			b.Fatalf("LoadFrom: %v, %v", cfg, err)
		}
	}
}
