package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/stream"
)

// The service has two interfaces, each with its own address and key: the
// main one (the lists, details and child lists) and a second one that
// serves the date-windowed list. A refused key or an unreachable host ends
// the tasks of its interface only; the other interface's tasks still run
// and land. Engine.windowTask says which interface a task asks.

// interfaceName names the interface of task t for logs and errors: the
// main interface, or the date-windowed endpoint by its declared name.
func (e *Engine) interfaceName(t Task) string {
	if e.windowTask(t) {
		if s, _ := e.hooksOfTask(t); s != nil {
			return s.EndpointsOf(stream.KindWindow)[0].Name + " endpoint"
		}
	}
	return "main interface"
}

// endsInterface returns err when it ends every task of its interface: the
// interface's key was refused (extract.ErrUnauthorized) or its host cannot
// be reached (extract.ErrUnreachable); else nil.
func endsInterface(err error) error {
	if errors.Is(err, extract.ErrUnauthorized) || errors.Is(err, extract.ErrUnreachable) {
		return err
	}
	return nil
}

// stopsTask reports whether err must end the task it arose in at once
// rather than let its other lists or entities go on: it stops the run
// (classifyStop) or ends its interface (endsInterface).
func stopsTask(ctx context.Context, err error) bool {
	return classifyStop(ctx, err) != nil || endsInterface(err) != nil
}

// downed is an interface that a task's error ended.
type downed struct {
	task Task
	err  error
}

// endInterface records that the error err of task t ended t's interface.
func (r *run) endInterface(t Task, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down == nil {
		r.down = map[bool]downed{}
	}
	if _, ok := r.down[r.e.windowTask(t)]; !ok {
		r.down[r.e.windowTask(t)] = downed{task: t, err: err}
	}
}

// interfaceDown returns the error of a task that is not run because an
// earlier task's error ended its interface, or nil.
func (r *run) interfaceDown(t Task) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.down[r.e.windowTask(t)]
	if !ok {
		return nil
	}
	return &notRunError{iface: r.e.interfaceName(t), after: d.task}
}

// notRunError is the error of a task not run because its interface failed
// in an earlier task (whose error says why).
type notRunError struct {
	iface string
	after Task
}

func (e *notRunError) Error() string {
	return fmt.Sprintf("not run: the %s failed in task %s", e.iface, e.after)
}
