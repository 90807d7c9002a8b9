package fleet

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// schedule is an agency's SYNC_SCHEDULE in its zone (AGENCY_QUOTA_TZ, as
// serve reads it); it is a River periodic schedule.
type schedule struct {
	spec string
	loc  *time.Location
	cron cron.Schedule
}

// parseSchedule reads a 5-field cron expression in loc (nil: UTC).
func parseSchedule(spec string, loc *time.Location) (*schedule, error) {
	c, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("parse schedule %q: %w", spec, err)
	}
	if loc == nil {
		loc = time.UTC
	}
	return &schedule{spec: spec, loc: loc, cron: c}, nil
}

// Next is the first scheduled moment after t.
func (s *schedule) Next(t time.Time) time.Time { return s.cron.Next(t.In(s.loc)) }

// key identifies the schedule: a change of expression or zone replaces the
// agency's periodic job.
func (s *schedule) key() string { return s.spec + " " + s.loc.String() }
