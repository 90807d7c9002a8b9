package engine

import (
	"context"
	"errors"
	"iter"
	"testing"
)

// TestPrefetchReportsCancellation: when the run's context ends while the
// producer waits to hand over an item, the consumer must get an error, never
// a sequence that simply ends (which reads as "the range is complete").
func TestPrefetchReportsCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produced := make(chan int)
	open := func(ctx context.Context) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := 1; ; i++ {
				// A fetch that succeeds although the context ended meanwhile:
				// the item is ready, only its hand-over meets the cancellation.
				produced <- i
				if !yield(i, nil) {
					return
				}
			}
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	var got []int
	var gotErr error
	go func() {
		<-produced // item 1 handed over
		<-produced // item 2 made while item 1 is being handled
	}()
	for v, err := range prefetch(ctx, false, open) {
		if err != nil {
			gotErr = err
			break
		}
		got = append(got, v)
		if v == 1 {
			cancel()
			// Let item 2 be produced; its hand-over now races with pctx.Done.
			// The producer blocks on `produced` for item 3, which nobody reads,
			// unless the consumer stops: drain in the background.
			go func() {
				for {
					select {
					case <-produced:
					case <-stop:
						return
					}
				}
			}()
		}
	}
	if gotErr == nil {
		t.Fatalf("sequence ended after items %v without an error: a cancelled run would read it as the end of the range", got)
	}
	if gotErr != nil && !errors.Is(gotErr, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", gotErr)
	}
}
