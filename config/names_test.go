package config

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestPrioritiesAreCheckedAndCompletedAtLoad: SYNC_PRIORITIES is parsed and
// checked against the known tasks by Load, so every command refuses a bad
// one; the order in force names every task.
func TestPrioritiesAreCheckedAndCompletedAtLoad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		value string
		want  string // the whole order in force; "" for an error
	}{
		{"", "communications-increment,brands,projects,finance,details,communications-backfill,verify"},
		{"communications-backfill, brands", "communications-backfill,brands,communications-increment,projects,finance,details,verify"},
		{"communications-increment,finance,brands,projects,details,communications-backfill,verify",
			"communications-increment,finance,brands,projects,details,communications-backfill,verify"},
		{"emails", ""},
		{"brands,brands", ""},
		{"brands,,projects", ""},
		{"brands;projects", ""},
	}
	for _, c := range cases {
		t.Run(c.value, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadTest(env(map[string]string{"SYNC_PRIORITIES": c.value}), noFiles)
			if c.want == "" {
				assertVariable(t, err, "SYNC_PRIORITIES")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Priorities.String(); got != c.want {
				t.Errorf("order %s, want %s", got, c.want)
			}
		})
	}
}

func TestStreamSchedulesAreGroupedAtLoad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		def, own string
		want     []Schedule // nil for an error naming SYNC_STREAM_SCHEDULES
	}{
		{"0 2 * * *", "", []Schedule{{"0 2 * * *", []string{"brands", "projects", "finance", "communications"}}}},
		{"0 2 * * *", "communications=0 * * * *", []Schedule{
			{"0 2 * * *", []string{"brands", "projects", "finance"}}, {"0 * * * *", []string{"communications"}}}},
		{"0 2 * * *", "communications=0 * * * *;finance=30 7,19 * * *", []Schedule{
			{"0 2 * * *", []string{"brands", "projects"}}, {"30 7,19 * * *", []string{"finance"}}, {"0 * * * *", []string{"communications"}}}},
		{"0 2 * * *", "finance=0 6 * * *; brands=0 6 * * *;projects=0 6 * * *;communications=0 6 * * *", []Schedule{
			{"0 6 * * *", []string{"brands", "projects", "finance", "communications"}}}},
		{"0 2 * * *", "emails=0 * * * *", nil},
		{"0 2 * * *", "communications", nil},
		{"0 2 * * *", "communications=every hour", nil},
		{"0 2 * * *", "communications=0 * * * *;communications=5 * * * *", nil},
	}
	for _, c := range cases {
		t.Run(c.own, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadTest(env(map[string]string{"SYNC_SCHEDULE": c.def, "SYNC_STREAM_SCHEDULES": c.own}), noFiles)
			if c.want == nil {
				assertVariable(t, err, "SYNC_STREAM_SCHEDULES")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Schedules, c.want) {
				t.Errorf("schedules %+v, want %+v", cfg.Schedules, c.want)
			}
		})
	}
}

func TestPathsAreCheckedAtLoad(t *testing.T) {
	t.Parallel()
	cfg := mustLoad(t, env(map[string]string{"AGENCY_PATHS": "brand_contacts=/v1/clients/{id}/people, communications=/hooks/mail"}), noFiles)
	if want := (EndpointPaths{"brand_contacts": "/v1/clients/{id}/people", "communications": "/hooks/mail"}); !reflect.DeepEqual(cfg.Paths, want) {
		t.Errorf("paths %v, want %v", cfg.Paths, want)
	}
	for bad, problem := range map[string]string{
		"contacts=/v1/contacts": `"contacts"`, "brands=v1/brands": `"brands=v1/brands" is not name=/path`,
		"brands": `"brands" is not name=/path`, "brands=/a,brands=/b": `endpoint "brands" twice`,
		"brand=/v1/clients":         `the path of "brand" must hold {id}`,
		"brands=/v1/brands/{id}":    `the path of "brands" must not hold {id}`,
		"brand_contacts=/v1/people": `the path of "brand_contacts" must hold {id}`,
	} {
		_, err := loadTest(env(map[string]string{"AGENCY_PATHS": bad}), noFiles)
		assertVariable(t, err, "AGENCY_PATHS")
		if !strings.Contains(err.Error(), problem) {
			t.Errorf("AGENCY_PATHS=%s: %v, want it to say %s", bad, err, problem)
		}
	}
	if cfg, err := loadTest(env(map[string]string{"AGENCY_PATHS": " , "}), noFiles); err != nil {
		t.Errorf("AGENCY_PATHS of no pair: %v", err)
	} else if cfg.Paths != nil {
		t.Errorf("AGENCY_PATHS of no pair: paths %v, want none", cfg.Paths)
	}
}

// TestLoadRefusesAnIncompleteKnown: without the names, a variable that
// refers to them could not be checked, so Load refuses to run at all.
func TestLoadRefusesAnIncompleteKnown(t *testing.T) {
	t.Parallel()
	for _, k := range []Known{{}, {Tasks: testKnown.Tasks, Streams: testKnown.Streams}, {Tasks: testKnown.Tasks, Endpoints: testKnown.Endpoints}} {
		_, err := LoadFrom(context.Background(), Environment{Lookup: env(nil), ReadFile: noFiles}, k)
		if !errors.Is(err, ErrIncompleteKnown) {
			t.Errorf("LoadFrom with %+v = %v, want ErrIncompleteKnown", k, err)
		}
	}
}

// TestRequireAsksOnlyForWhatIsNeeded: a missing variable fails only the
// needs that include it, naming it.
func TestRequireAsksOnlyForWhatIsNeeded(t *testing.T) {
	t.Parallel()
	full := map[string]string{
		"AGENCY_BASE_URL": "https://api.agency.example", "AGENCY_API_KEY": "k-main",
		"AGENCY_COMMS_URL": "https://wf.agency.example", "AGENCY_COMMS_KEY": "k-comms",
		"AGENCY_COMMS_DOMAIN_ID": "7", "AGENCY_COMMS_USER_IDS": "1-5", "AGENCY_COMMS_START_DATE": "2024-01-31",
	}
	needOf := map[string]Need{
		"AGENCY_BASE_URL": NeedBaseURL, "AGENCY_API_KEY": NeedAPIKey, "AGENCY_COMMS_URL": NeedComms, "AGENCY_COMMS_KEY": NeedComms,
		"AGENCY_COMMS_DOMAIN_ID": NeedComms, "AGENCY_COMMS_USER_IDS": NeedComms, "AGENCY_COMMS_START_DATE": NeedStartDate,
	}
	for missing, need := range needOf {
		vars := map[string]string{}
		for k, v := range full {
			if k != missing {
				vars[k] = v
			}
		}
		cfg, err := loadTest(env(vars), noFiles)
		if err != nil {
			t.Fatalf("without %s: %v", missing, err)
		}
		for _, n := range []Need{0, NeedBaseURL, NeedAPIKey, NeedMain, NeedComms, NeedStartDate, NeedBaseURL | NeedComms, NeedSync} {
			err := cfg.Require(n)
			if n&need == 0 {
				if err != nil {
					t.Errorf("without %s, Require(%b) = %v, want nil", missing, n, err)
				}
				continue
			}
			assertVariable(t, err, missing)
		}
	}
}

func TestEffectiveShowsTheOrderInForceAsDefault(t *testing.T) {
	t.Parallel()
	lookup := env(map[string]string{"AGENCY_FIELD_MAP": "projects.name=title"})
	cfg := mustLoad(t, lookup, noFiles)
	got := map[string]Setting{}
	for _, s := range cfg.Effective(lookup) {
		got[s.Name] = s
	}
	if s := got["SYNC_PRIORITIES"]; s.Source != "default" || !strings.HasPrefix(s.Value, "communications-increment,brands,") {
		t.Errorf("SYNC_PRIORITIES %+v, want the default order", s)
	}
	if s := got["AGENCY_FIELD_MAP"]; s.Source != "environment" || s.Value != "projects.name=title" {
		t.Errorf("AGENCY_FIELD_MAP %+v", s)
	}
	if s := got["AGENCY_FIELD_MAP_FILE"]; s.Source != "unset" || s.Value != "(unset)" {
		t.Errorf("AGENCY_FIELD_MAP_FILE %+v", s)
	}
}
