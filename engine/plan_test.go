package engine

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestMakePlan(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		quota     int
		reserve   float64
		spent     int
		estimates []Estimate
		budget    int
		allotted  map[Task]int
		deferred  map[Task]int
	}{
		{
			name: "everything fits", quota: 10000, reserve: 0.05, spent: 100,
			estimates: []Estimate{{Task: Task("brands"), Requests: 1}, {Task: TaskCommsIncrement, Requests: 3}, {Task: TaskDetails, Requests: 50}},
			budget:    9400,
			allotted:  map[Task]int{Task("brands"): 1, TaskCommsIncrement: 3, TaskDetails: 50},
			deferred:  map[Task]int{},
		},
		{
			name: "backfill takes what is left", quota: 1000, reserve: 0.10, spent: 0,
			estimates: []Estimate{{Task: TaskCommsBackfill, Requests: 1, Unknown: true}, {Task: Task("finance"), Requests: 7}},
			budget:    900,
			allotted:  map[Task]int{Task("finance"): 7, TaskCommsBackfill: 893},
			deferred:  map[Task]int{},
		},
		{
			name: "an open-ended task before another gets its known part", quota: 100, reserve: 0, spent: 0,
			estimates: []Estimate{{Task: TaskCommsBackfill, Requests: 1, Unknown: true}, {Task: TaskDetails, Requests: 2, Unknown: true}, {Task: Task("finance"), Requests: 7}},
			budget:    100,
			allotted:  map[Task]int{Task("finance"): 7, TaskDetails: 2, TaskCommsBackfill: 91},
			deferred:  map[Task]int{},
		},
		{
			name: "priorities decide who waits", quota: 100, reserve: 0, spent: 40,
			estimates: []Estimate{{Task: TaskCommsBackfill, Requests: 500}, {Task: TaskDetails, Requests: 50}, {Task: TaskCommsIncrement, Requests: 5}, {Task: Task("finance"), Requests: 7}},
			budget:    60,
			allotted:  map[Task]int{TaskCommsIncrement: 5, Task("finance"): 7, TaskDetails: 48, TaskCommsBackfill: 0},
			deferred:  map[Task]int{TaskDetails: 2, TaskCommsBackfill: 500},
		},
		{
			name: "spent beyond the budget", quota: 100, reserve: 0.05, spent: 99,
			estimates: []Estimate{{Task: Task("brands"), Requests: 1}},
			budget:    0,
			allotted:  map[Task]int{Task("brands"): 0},
			deferred:  map[Task]int{Task("brands"): 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := MakePlan(day, c.quota, c.reserve, c.spent, DefaultPriorities, c.estimates)
			if p.Budget != c.budget {
				t.Fatalf("budget = %d, want %d", p.Budget, c.budget)
			}
			if p.Allotted() > p.Budget {
				t.Fatalf("allotted %d > budget %d", p.Allotted(), p.Budget)
			}
			for _, it := range p.Items {
				if it.Allotted != c.allotted[it.Task] || it.Deferred != c.deferred[it.Task] {
					t.Errorf("%s: allotted %d deferred %d, want %d and %d", it.Task, it.Allotted, it.Deferred, c.allotted[it.Task], c.deferred[it.Task])
				}
			}
			// Items follow the priority order.
			for i := 1; i < len(p.Items); i++ {
				if priority(p.Items[i-1].Task) > priority(p.Items[i].Task) {
					t.Errorf("items out of priority order: %v before %v", p.Items[i-1].Task, p.Items[i].Task)
				}
			}
		})
	}
}

func priority(t Task) int {
	for i, p := range DefaultPriorities {
		if p == t {
			return i
		}
	}
	return -1
}

func TestPlanPrint(t *testing.T) {
	t.Parallel()
	p := MakePlan(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), 10000, 0.05, 0, DefaultPriorities,
		[]Estimate{{Task: TaskCommsBackfill, Requests: 1, Unknown: true, Note: "first page tells"}})
	var b bytes.Buffer
	p.Print(&b)
	for _, s := range []string{"2026-11-22", "budget for this run 9500", "communications-backfill", "unknown", "first page tells"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("plan output lacks %q:\n%s", s, b.String())
		}
	}
}
