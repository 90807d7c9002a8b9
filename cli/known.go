package cli

import (
	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/serve"
	"github.com/agencysync/agencysync/stream"
)

// Known is what the configuration's variables may name, from the packages
// that own the names: the planner's tasks and the streams (engine), the
// endpoints (the stream declarations). Every command that reads the configuration loads it
// with these, so a bad name fails them all.
func Known() config.Known {
	k := config.Known{Streams: engine.AllStreams,
		// AGENCY_FIELD_MAP names warehouse columns of the declarations.
		FieldMap: func(m map[string]string) error { return stream.FieldMap(m).Validate() }}
	for _, t := range engine.DefaultPriorities {
		k.Tasks = append(k.Tasks, string(t))
	}
	for _, s := range stream.All() {
		for _, ep := range s.Endpoints {
			k.Endpoints = append(k.Endpoints, ep.Name)
			if kind := ep.Kind(); kind == stream.KindDetail || kind == stream.KindChild {
				k.Entity = append(k.Entity, ep.Name)
			}
		}
	}
	k.PagingLists, k.FixedPaging = stream.Lists()
	return k
}

// declarations are the stream declarations in force: the field map's
// columns (AGENCY_FIELD_MAP, AGENCY_FIELD_MAP_FILE) and each list's paging
// (AGENCY_PAGING, the file's paging:).
func declarations(cfg *config.Config) ([]*stream.Stream, error) {
	streams, err := stream.Apply(stream.FieldMap(cfg.FieldMap))
	if err != nil {
		return nil, &config.Error{Variable: "AGENCY_FIELD_MAP", Problem: err.Error(), Form: "table.column=source.path pairs"}
	}
	o := stream.PagingOverrides{}
	for ep, s := range cfg.Paging {
		o[ep] = stream.PagingOverride{Style: stream.PageStyle(s.Style), Page: s.Page, Size: s.Size, Offset: s.Offset, Cursor: s.Cursor, Max: s.Max}
	}
	streams, err = stream.ApplyPaging(streams, o)
	if err != nil {
		return nil, &config.Error{Variable: "AGENCY_PAGING", Problem: err.Error(), Form: "comma-separated endpoint=style[:option=value…]"}
	}
	return streams, nil
}

// extractPaths turns AGENCY_PATHS into the client's paths (the other
// endpoints keep their declared ones).
func extractPaths(m config.EndpointPaths) extract.Paths { return extract.Paths(m) }

// priorities turns the task order in force into the engine's tasks.
func priorities(order config.TaskOrder) []engine.Task {
	out := make([]engine.Task, len(order))
	for i, t := range order {
		out[i] = engine.Task(t)
	}
	return out
}

// schedules turns serve's schedules in force into the engine's.
func schedules(in []config.Schedule) []serve.Schedule {
	out := make([]serve.Schedule, len(in))
	for i, s := range in {
		out[i] = serve.Schedule{Spec: s.Spec, Streams: s.Streams}
	}
	return out
}

// syncNeeds is what a sync of streams uses: the main interface for the
// lists and details; for the e-mails the communications endpoint, where
// their history starts, and the main interface's address, whose answers
// tell the service's clock (the quota day).
func syncNeeds(streams []string) config.Need {
	var n config.Need
	for _, s := range streams {
		if dated(s) {
			n |= config.NeedBaseURL | config.NeedComms | config.NeedStartDate
		} else {
			n |= config.NeedMain
		}
	}
	return n
}

// dated reports whether the stream named name is read by date window on
// the communications interface (its history starts at
// AGENCY_COMMS_START_DATE and is backfilled by date).
func dated(name string) bool {
	s, ok := stream.Lookup(name)
	return ok && len(s.EndpointsOf(stream.KindWindow)) > 0
}

// datedStream is the name of the stream read by date window ("" when none
// is declared).
func datedStream() string {
	for _, s := range stream.All() {
		if dated(s.Name) {
			return s.Name
		}
	}
	return ""
}
