package engine

import (
	"cmp"
	"context"
	"fmt"
	"iter"
)

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
