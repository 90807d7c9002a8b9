package engine

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/logging"
)

// TestFetchGoroutinePanicsBecomeErrors: a panic in a goroutine that fetches
// ahead would end the process with Go's own report — panic value and stack
// on stderr, unredacted, and no sync_runs row closed. It must reach the
// goroutine's owner as an error (ErrPanic) instead, as every other failure
// of a fetch does.
func TestFetchGoroutinePanicsBecomeErrors(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, seq iter.Seq2[int, error]) {
		t.Helper()
		var got []int
		for v, err := range seq {
			if err != nil {
				if !errors.Is(err, ErrPanic) || !strings.Contains(err.Error(), "exploded at 2") {
					t.Fatalf("error %v, want ErrPanic with the panic's value", err)
				}
				if len(got) != 2 {
					t.Fatalf("items before the error %v, want [0 1]", got)
				}
				return
			}
			got = append(got, v)
		}
		t.Fatalf("sequence ended after %v without an error", got)
	}
	t.Run("prefetch", func(t *testing.T) {
		check(t, prefetch(ctx, false, func(context.Context) iter.Seq2[int, error] {
			return func(yield func(int, error) bool) {
				for i := 0; ; i++ {
					if i == 2 {
						panic("exploded at 2")
					}
					if !yield(i, nil) {
						return
					}
				}
			}
		}))
	})
	t.Run("fetchOrdered", func(t *testing.T) {
		check(t, fetchOrdered(ctx, func() int { return 3 }, 5, func(_ context.Context, i int) (int, error) {
			if i == 2 {
				panic("exploded at 2")
			}
			return i, nil
		}))
	})
	t.Run("pagesAhead", func(t *testing.T) {
		actx, cancel := context.WithCancel(ctx)
		defer cancel()
		a := &pagesAhead{ctx: actx, pages: map[int]*pageAhead{}}
		a.launch(2, 1000, nil, "", func(context.Context) (*spooledPage, bool, error) { panic("exploded at 2") })
		f := a.pages[2]
		<-f.done
		if !errors.Is(f.err, ErrPanic) || !strings.Contains(f.err.Error(), "exploded at 2") {
			t.Fatalf("page fetched ahead: error %v, want ErrPanic with the panic's value", f.err)
		}
		a.wg.Wait()
	})
}

// TestRunErrorTextIsRedacted: sync_runs.error gets the run's error and notes
// redacted, whatever made them (here a panic's value holding the key).
func TestRunErrorTextIsRedacted(t *testing.T) {
	const key = "key-0123456789abcdef"
	redact := logging.NewRedactor(key).String
	got := runErrorText(panicError("token "+key+" rejected"), []string{"note about " + key[:10]}, redact)
	if strings.Contains(got, key[:8]) || !strings.Contains(got, "rejected") || !strings.Contains(got, "notes: note about") {
		t.Fatalf("sync_runs.error text %q", got)
	}
	if got := runErrorText(nil, nil, redact); got != "" {
		t.Fatalf("no error, no notes: %q", got)
	}
}
