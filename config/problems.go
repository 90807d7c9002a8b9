package config

import (
	"errors"
	"fmt"
	"strings"
)

// Errors is every problem of a configuration found at once, each an *Error
// naming its variable: a user fixes them in one round instead of one
// variable a run. errors.As finds each *Error in it (exit code 2).
type Errors struct {
	List []*Error
}

func (e *Errors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.List))
	for _, p := range e.List {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns each problem, so that errors.As and errors.Is see them.
func (e *Errors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, p := range e.List {
		out[i] = p
	}
	return out
}

// problems collects the configuration's errors, at most one per variable
// (the first said of it).
type problems struct {
	list []*Error
	errs []error // errors that are not an *Error (a programming error)
}

// add records err: an *Error (or an *Errors' list) by its variable, any
// other error as it is. nil is ignored.
func (p *problems) add(err error) {
	if err == nil {
		return
	}
	var list *Errors
	var one *Error
	switch {
	case errors.As(err, &list):
		for _, e := range list.List {
			p.add(e)
		}
	case errors.As(err, &one):
		if !p.has(one.Variable) {
			p.list = append(p.list, one)
		}
	default:
		p.errs = append(p.errs, err)
	}
}

// field records a problem of the Config field named field.
func (p *problems) field(field, problem string) { p.add(fieldError(field, problem)) }

// has reports whether a problem of variable is recorded.
func (p *problems) has(variable string) bool {
	for _, e := range p.list {
		if e.Variable == variable {
			return true
		}
	}
	return false
}

// err is nil without problems, the one *Error when there is one, else an
// *Errors listing them all; an error that is no *Error comes first.
func (p *problems) err() error {
	switch {
	case len(p.errs) > 0:
		return errors.Join(p.errs...)
	case len(p.list) == 0:
		return nil
	case len(p.list) == 1:
		return p.list[0]
	}
	return &Errors{List: p.list}
}
