package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agencysync/agencysync/stream"
)

// The engine runs the stream declarations in force (Settings.Streams), and
// everything it plans, runs, resumes and reports follows from them: a
// stream's list task runs its Lists (lists.go), the details task the
// details and child lists of every stream's entities that are due
// (details.go), and a stream whose declaration names hooks is run by them
// (hooks.go).

// TaskDetails is the task that fetches the details and child lists of the
// entities that are due, stalest first, stream after stream.
const TaskDetails Task = "details"

// AllStreams lists every declared stream in its default order.
var AllStreams = stream.Names()

// DefaultPriorities is the default order of the declarations' tasks.
var DefaultPriorities = tasksOf(stream.All())

// tasksOf lists the tasks of streams in their default priority order: the
// tasks their hooks run first, each list task in declaration order, the
// details task when a stream has entities, then the hooks' later tasks.
func tasksOf(streams []*stream.Stream) []Task {
	var first, lists, later []Task
	details := false
	for _, s := range streams {
		if h := hooksNamed(s.Hooks); h != nil {
			f, l := h.tasks()
			first, later = append(first, f...), append(later, l...)
			continue
		}
		if len(s.Lists) > 0 {
			lists = append(lists, Task(s.Name))
		}
		if _, _, ok := s.Entities(); ok {
			details = true
		}
	}
	out := append(first, lists...)
	if details {
		out = append(out, TaskDetails)
	}
	return append(out, later...)
}

// ParseStreams parses a comma-separated stream selection; empty selects all.
func ParseStreams(s string) ([]string, error) {
	return parseStreams(AllStreams, s, "parse streams")
}

// parseStreams parses a selection among names ("" selects all); op names
// the operation in errors.
func parseStreams(names []string, s, op string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return names, nil
	}
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		name := strings.TrimSpace(part)
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("%s: unknown stream %q (want %s)", op, name, strings.Join(names, ","))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// checkStreams checks the declarations an engine runs: complete (see
// stream.Check), and every hooks name one the engine has.
func checkStreams(streams []*stream.Stream) error {
	if err := stream.Check(streams); err != nil {
		return err
	}
	for _, s := range streams {
		if s.Hooks != "" && hooksNamed(s.Hooks) == nil {
			return fmt.Errorf("stream %s: no hooks named %q: %w", s.Name, s.Hooks, stream.ErrDeclaration)
		}
	}
	return nil
}

// completePriorities is order followed by the tasks of streams it leaves
// out, in their default order: every declared task is planned.
func completePriorities(order []Task, streams []*stream.Stream) []Task {
	out := slices.Clone(order)
	for _, t := range tasksOf(streams) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// streamNames are the names of the engine's streams, in order.
func (e *Engine) streamNames() []string {
	out := make([]string, len(e.set.Streams))
	for i, s := range e.set.Streams {
		out[i] = s.Name
	}
	return out
}

// declared returns the declaration of the stream named name (nil when the
// engine has none).
func (e *Engine) declared(name string) *stream.Stream {
	for _, s := range e.set.Streams {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// selected returns the declarations of names, in the engine's order.
func (e *Engine) selected(names []string) []*stream.Stream {
	var out []*stream.Stream
	for _, s := range e.set.Streams {
		if slices.Contains(names, s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// withEntities returns the streams of names whose entities have details or
// child lists, in the engine's order.
func (e *Engine) withEntities(names []string) []*stream.Stream {
	var out []*stream.Stream
	for _, s := range e.selected(names) {
		if _, _, ok := s.Entities(); ok {
			out = append(out, s)
		}
	}
	return out
}

// taskStream names the stream(s) task t belongs to, comma-separated (the
// details task's are every stream with entities).
func (e *Engine) taskStream(t Task) string {
	if t == TaskDetails {
		var names []string
		for _, s := range e.withEntities(e.streamNames()) {
			names = append(names, s.Name)
		}
		return strings.Join(names, ",")
	}
	if s, _ := e.hooksOfTask(t); s != nil {
		return s.Name
	}
	return string(t)
}

// hooksOfTask returns the stream whose hooks run task t and the hooks (nil
// for a list task or the details task).
func (e *Engine) hooksOfTask(t Task) (*stream.Stream, streamHooks) {
	for _, s := range e.set.Streams {
		if h := hooksNamed(s.Hooks); h != nil {
			first, later := h.tasks()
			if slices.Contains(first, t) || slices.Contains(later, t) {
				return s, h
			}
		}
	}
	return nil, nil
}

// endpointOf returns the declared endpoint named name and its stream.
func (e *Engine) endpointOf(name string) (*stream.Stream, stream.Endpoint, bool) {
	for _, s := range e.set.Streams {
		if ep, ok := s.Endpoint(name); ok {
			return s, ep, true
		}
	}
	return nil, stream.Endpoint{}, false
}

// inventoryName is the name of endpoint's records in the field inventory
// (stream.Endpoint.InventoryName; the endpoint's name when undeclared).
func (e *Engine) inventoryName(endpoint string) string {
	if _, ep, ok := e.endpointOf(endpoint); ok {
		return ep.InventoryName()
	}
	return endpoint
}

// tableOf returns the declared table named name and its stream.
func (e *Engine) tableOf(name string) (*stream.Table, *stream.Stream, bool) {
	for _, s := range e.set.Streams {
		if t, ok := s.Table(name); ok {
			return t, s, true
		}
	}
	return nil, nil, false
}

// windowTask reports whether task t asks the second interface (a task of a
// stream whose endpoints are date-windowed lists), else the main
// interface.
func (e *Engine) windowTask(t Task) bool {
	s, _ := e.hooksOfTask(t)
	return s != nil && len(s.EndpointsOf(stream.KindWindow)) > 0
}
