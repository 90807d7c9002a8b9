package serve

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/internal/testkit/loopback"
)

// TestHandlerPanicGoesThroughTheLogger: a panic in a request's handler is
// reported by net/http (value and stack). The report must go through the
// injected logger — whose sink the binary redacts — not to the process's
// stderr through the standard library's default logger.
func TestHandlerPanicGoesThroughTheLogger(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.DebugLevel)
	ctx, cancel := context.WithCancel(context.Background())
	addr := loopback.FreeAddr(t)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, &fakeRunner{}, Options{HTTPAddr: addr, Logger: zap.New(core),
			StatusPage: NewStatusPage(&panickingSource{}, StatusPageOptions{})})
	}()
	get(t, "http://"+addr+"/healthz") // up
	_, _ = http.Get("http://" + addr + "/")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message, "status page exploded") {
			return
		}
	}
	t.Fatalf("the handler's panic did not reach the injected logger; %d entries", logs.Len())
}

// panickingSource is a StatusSource that panics when read.
type panickingSource struct{ fakeStatus }

func (*panickingSource) Status(context.Context, int) (*engine.StatusReport, error) {
	panic("status page exploded with key-0123456789abcdef")
}
