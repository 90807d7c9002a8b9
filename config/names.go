package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/robfig/cron/v3"
)

// Known names what the variables may refer to. The packages that own the
// names supply them — the engine its tasks and streams, extract its
// endpoints, the stream declarations the columns that AGENCY_FIELD_MAP
// remaps — so that config imports none of them (cli.Known assembles it).
// Load refuses a Known without tasks, streams or endpoints: a variable that
// names them is checked by every command or by none.
type Known struct {
	// Tasks are the planner's tasks in their default order (SYNC_PRIORITIES).
	Tasks []string
	// Streams are the streams serve schedules, in their order (SYNC_STREAM_SCHEDULES).
	Streams []string
	// Endpoints are the endpoint names AGENCY_PATHS remaps.
	Endpoints []string
	// Entity are those of Endpoints asked per entity (a detail, a list
	// asked per entity): their path holds the entity's {id}, the others'
	// none.
	Entity []string
	// PagingLists are the lists AGENCY_PAGING may give any style, and
	// FixedPaging the endpoints whose style is fixed (only max= may be
	// set): the communications endpoint.
	PagingLists, FixedPaging []string
	// FieldMap checks the merged pairs of AGENCY_FIELD_MAP_FILE and
	// AGENCY_FIELD_MAP (key "table.column", value a source field path)
	// against the stream declarations: an unknown table or column is an
	// error naming it. Nil checks their syntax only.
	FieldMap func(map[string]string) error
}

func (k Known) complete() error {
	switch {
	case len(k.Tasks) == 0:
		return fmt.Errorf("load configuration: %w: no task names", ErrIncompleteKnown)
	case len(k.Streams) == 0:
		return fmt.Errorf("load configuration: %w: no stream names", ErrIncompleteKnown)
	case len(k.Endpoints) == 0:
		return fmt.Errorf("load configuration: %w: no endpoint names", ErrIncompleteKnown)
	}
	return nil
}

// TaskOrder is SYNC_PRIORITIES: task names, comma-separated, each once.
// After Load it holds every known task: the ones named first, the rest in
// their default order.
type TaskOrder []string

// EnvDecode implements envconfig.Decoder: the syntax only (Load checks the
// names against Known.Tasks).
func (o *TaskOrder) EnvDecode(v string) error {
	var out TaskOrder
	if strings.TrimSpace(v) == "" {
		*o = nil
		return nil
	}
	for part := range strings.SplitSeq(v, ",") {
		t := strings.TrimSpace(part)
		if t == "" {
			return &valueError{"an empty task name (two commas in a row?)"}
		}
		if slices.Contains(out, t) {
			return &valueError{fmt.Sprintf("task %q twice", t)}
		}
		out = append(out, t)
	}
	*o = out
	return nil
}

// String renders the order comma-separated.
func (o TaskOrder) String() string { return strings.Join(o, ",") }

// complete checks the names and appends the tasks left out in their
// default order.
func (o TaskOrder) complete(tasks []string) (TaskOrder, error) {
	for _, t := range o {
		if !slices.Contains(tasks, t) {
			return nil, &valueError{fmt.Sprintf("unknown task %q (tasks: %s)", t, strings.Join(tasks, ","))}
		}
	}
	out := slices.Clone(o)
	for _, t := range tasks {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// StreamSchedule is one entry of SYNC_STREAM_SCHEDULES: a stream and its own
// cron expression.
type StreamSchedule struct {
	Stream string
	Spec   string
}

// StreamSchedules is SYNC_STREAM_SCHEDULES: "stream=cron" entries separated
// by ";", in the order written, each stream once.
type StreamSchedules []StreamSchedule

// EnvDecode implements envconfig.Decoder: the syntax and the cron
// expressions (Load checks the stream names against Known.Streams).
func (s *StreamSchedules) EnvDecode(v string) error {
	var out StreamSchedules
	for entry := range listItems(v, ";") {
		name, spec, ok := cutTrimmed(entry, "=")
		if !ok || name == "" || spec == "" {
			return &valueError{fmt.Sprintf("%q is not stream=cron", entry)}
		}
		if _, err := cron.ParseStandard(spec); err != nil {
			return &valueError{fmt.Sprintf("%s: %q is not a cron expression", name, spec)}
		}
		if slices.ContainsFunc(out, func(x StreamSchedule) bool { return x.Stream == name }) {
			return &valueError{fmt.Sprintf("stream %q twice", name)}
		}
		out = append(out, StreamSchedule{Stream: name, Spec: spec})
	}
	*s = out
	return nil
}

// String renders the entries as written: "stream=cron;…".
func (s StreamSchedules) String() string {
	parts := make([]string, len(s))
	for i, e := range s {
		parts[i] = e.Stream + "=" + e.Spec
	}
	return strings.Join(parts, ";")
}

func (s StreamSchedules) check(streams []string) error {
	for _, e := range s {
		if !slices.Contains(streams, e.Stream) {
			return &valueError{fmt.Sprintf("unknown stream %q (streams: %s)", e.Stream, strings.Join(streams, ","))}
		}
	}
	return nil
}

// Schedule is a cron expression of serve and the streams it syncs.
type Schedule struct {
	Spec    string
	Streams []string
}

// schedules groups the streams by the expression they run on: first
// SYNC_SCHEDULE for every stream SYNC_STREAM_SCHEDULES does not name, then
// one schedule per expression of SYNC_STREAM_SCHEDULES (streams sharing one
// run together), streams in their known order.
func schedules(defaultSpec string, own StreamSchedules, streams []string) []Schedule {
	specOf := map[string]string{}
	for _, e := range own {
		specOf[e.Stream] = e.Spec
	}
	var out []Schedule
	var rest []string
	for _, s := range streams {
		if _, ok := specOf[s]; !ok {
			rest = append(rest, s)
		}
	}
	if len(rest) > 0 {
		out = append(out, Schedule{Spec: defaultSpec, Streams: rest})
	}
	done := map[string]bool{}
	for _, s := range streams {
		spec, ok := specOf[s]
		if !ok || done[spec] {
			continue
		}
		done[spec] = true
		sch := Schedule{Spec: spec}
		for _, t := range streams {
			if specOf[t] == spec {
				sch.Streams = append(sch.Streams, t)
			}
		}
		out = append(out, sch)
	}
	return out
}

// EndpointPaths is AGENCY_PATHS: endpoint name → path, from comma-separated
// "name=/path" pairs.
type EndpointPaths map[string]string

// EnvDecode implements envconfig.Decoder: the syntax (Load checks the names
// against Known.Endpoints).
func (p *EndpointPaths) EnvDecode(v string) error {
	out, err := parsePairs(v, "endpoint %q twice", func(pair, name, path string, ok bool) string {
		if !ok || name == "" || !strings.HasPrefix(path, "/") {
			return fmt.Sprintf("%q is not name=/path", pair)
		}
		return ""
	})
	if err != nil {
		return err
	}
	*p = out
	return nil
}

// String renders the pairs sorted by name.
func (p EndpointPaths) String() string {
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		names[i] = n + "=" + p[n]
	}
	return strings.Join(names, ",")
}

// check refuses a name that is not one of endpoints, the path of an entity
// endpoint (a detail, a list asked per entity) without {id}, and {id} in
// the path of any other.
func (p EndpointPaths) check(endpoints, entity []string) error {
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		hasID := strings.Contains(p[n], "{id}")
		switch {
		case !slices.Contains(endpoints, n):
			return &valueError{fmt.Sprintf("unknown endpoint %q (endpoints: %s)", n, strings.Join(endpoints, ","))}
		case slices.Contains(entity, n) && !hasID:
			return &valueError{fmt.Sprintf("the path of %q must hold {id}, where the entity's id goes (got %q)", n, p[n])}
		case !slices.Contains(entity, n) && hasID:
			return &valueError{fmt.Sprintf("the path of %q must not hold {id}: it is not asked per entity (got %q)", n, p[n])}
		}
	}
	return nil
}
