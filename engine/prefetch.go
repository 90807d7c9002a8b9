package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
)

// ErrPanic marks the error of a goroutine that fetched ahead and panicked:
// its owner gets it as the fetch's error (the run fails and its row is
// closed with the error, redacted like any other) instead of the process
// ending with Go's unredacted report.
var ErrPanic = errors.New("panic in a goroutine fetching ahead")

// panicError is the error for a recovered panic value: the value and the
// goroutine's stack, marked ErrPanic.
func panicError(v any) error {
	return fmt.Errorf("%w: %v\n%s", ErrPanic, v, debug.Stack())
}

// prefetch runs the sequence made by open in its own goroutine, one item
// ahead of the consumer: while the consumer handles (loads) item n, item n+1
// is being fetched. The channel is unbuffered, so no more than one item waits
// — a crash loses at most the page in hand and the one being fetched (with
// the engine's spool, only a request in flight). When
// the consumer stops early, the producer's context is cancelled and the
// goroutine ends before prefetch returns. A sequence cut short by the end of
// ctx ends with ctx's error, never silently: a consumer must be able to tell
// "no more items" from "stopped".
func prefetch[T any](ctx context.Context, off bool, open func(ctx context.Context) iter.Seq2[T, error]) iter.Seq2[T, error] {
	if off {
		return open(ctx)
	}
	return func(yield func(T, error) bool) {
		pctx, cancel := context.WithCancel(ctx)
		type item struct {
			v   T
			err error
		}
		ch := make(chan item)
		done := make(chan struct{})
		complete := false // the sequence ended by itself (written before ch closes)
		go func() {
			defer close(done)
			defer close(ch)
			defer func() {
				if v := recover(); v != nil {
					select {
					case ch <- item{err: panicError(v)}:
					case <-pctx.Done():
					}
				}
			}()
			for v, err := range open(pctx) {
				select {
				case ch <- item{v, err}:
				case <-pctx.Done():
					return
				}
				if err != nil {
					return
				}
			}
			complete = true
		}()
		defer func() {
			cancel()
			for range ch { // let the producer finish
			}
			<-done
		}()
		for it := range ch {
			if !yield(it.v, it.err) {
				return
			}
			if it.err != nil {
				return
			}
		}
		if !complete {
			// The producer gave up on a hand-over because ctx ended.
			var zero T
			yield(zero, fmt.Errorf("prefetch: %w", cmp.Or(ctx.Err(), context.Canceled)))
		}
	}
}

// fetchOrdered fetches items 0..count-1 with fetch, up to n = inFlight() at
// a time (asked again before each launch, so it may follow the answer
// times), and yields them in index order: while the consumer handles item
// i, items i+1..i+n are being fetched (or wait, fetched, for their turn) — no more,
// so at most n requests are in flight and at most n fetched items wait for
// the consumer. With n = 1 it is prefetch's one item ahead. The fetches run
// in goroutines of fetchOrdered's own, which all end before it returns: when
// the consumer stops early or an item fails, the others' context is
// cancelled and their results are dropped. A failed item is yielded with its
// error after every item before it, and ends the sequence. A fetch must be
// safe to run concurrently with the others.
func fetchOrdered[T any](ctx context.Context, inFlight func() int, count int, fetch func(ctx context.Context, i int) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		pctx, cancel := context.WithCancel(ctx)
		type result struct {
			v   T
			err error
		}
		var wg sync.WaitGroup
		defer func() {
			cancel()
			wg.Wait()
		}()
		var pending []chan result // the items launched and not yet yielded, in index order
		launched := 0
		launch := func(upTo int) { // launch items below upTo
			for ; launched < min(upTo, count); launched++ {
				i := launched
				ch := make(chan result, 1)
				pending = append(pending, ch)
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() {
						if v := recover(); v != nil {
							ch <- result{err: panicError(v)}
						}
					}()
					v, err := fetch(pctx, i)
					ch <- result{v, err}
				}()
			}
		}
		for i := range count {
			n := max(inFlight(), 1)
			launch(i + n)
			var res result
			select {
			case res = <-pending[0]:
			case <-ctx.Done():
				var zero T
				yield(zero, fmt.Errorf("fetch ahead: %w", ctx.Err()))
				return
			}
			pending = pending[1:]
			launch(i + 1 + max(inFlight(), 1)) // the next n fetch while item i is handled
			if !yield(res.v, res.err) || res.err != nil {
				return
			}
		}
	}
}
