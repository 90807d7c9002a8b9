package engine

import (
	"context"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/stream"
)

// quietHooks are hooks that run two tasks and estimate only the first.
type quietHooks struct{ mailHooks }

func init() { hooksRegistry["quiet"] = quietHooks{} }

func (quietHooks) tasks() (first, later []Task) { return []Task{"quiet-first"}, []Task{"quiet-later"} }

func (quietHooks) estimate(context.Context, *Engine) ([]Estimate, error) {
	return []Estimate{{Task: "quiet-first", Requests: 1}}, nil
}

func (quietHooks) run(context.Context, *run, Task, Request, *zap.Logger) error { return nil }

// quietStream is a stream run by the quiet hooks.
func quietStream(t *testing.T) *stream.Stream {
	t.Helper()
	s, err := stream.New(stream.Stream{Name: "quiet", Main: "quiet_rows", Hooks: "quiet",
		Endpoints: []stream.Endpoint{{Name: "quiet_window", Path: "/quiet", Paging: stream.PagingWindow,
			Pagination: stream.StyleDefaults(stream.StylePage)}}},
		&stream.Table{Name: "quiet_rows", Noun: "row", Reject: "quiet", SoftDelete: true,
			Columns: []stream.Column{{Name: "id", Field: "id", Type: stream.ID, Key: true}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The tasks follow from the declarations: the hooks' first tasks, each
// list task in declaration order, the details task when a stream has
// entities, the hooks' later tasks; priorities given leave none out.
func TestTasksFollowTheDeclarations(t *testing.T) {
	streams := append(stream.All(), quietStream(t))
	got := tasksOf(streams)
	var want []Task
	for _, s := range streams {
		if h := hooksNamed(s.Hooks); h != nil {
			first, _ := h.tasks()
			want = append(want, first...)
		}
	}
	for _, s := range streams {
		if len(s.Lists) > 0 {
			want = append(want, Task(s.Name))
		}
	}
	want = append(want, TaskDetails)
	for _, s := range streams {
		if h := hooksNamed(s.Hooks); h != nil {
			_, later := h.tasks()
			want = append(want, later...)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tasks %v, want %v", got, want)
	}
	if p := completePriorities([]Task{"quiet-later", TaskDetails}, streams); len(p) != len(want) || p[0] != "quiet-later" || p[1] != TaskDetails {
		t.Fatalf("priorities completed: %v", p)
	}
}

// A task its stream's hooks do not estimate would never run: planning
// refuses, naming it.
func TestATaskWithoutEstimateIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), func(s *Settings) { s.Streams = append(stream.All(), quietStream(t)) })
	_, err := h.eng.Plan(context.Background(), []string{"quiet"})
	if err == nil || !strings.Contains(err.Error(), "quiet-later has no estimate") {
		t.Fatalf("plan: %v, want the task without an estimate named", err)
	}
}
