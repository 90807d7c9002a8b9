package fleet

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/agencysync/agencysync/internal/testkit/loopback"
)

// TestReadyzNamesTheJobQueue: while the job queue's database does not
// answer, /readyz is 503 and says so; /healthz still answers.
func TestReadyzNamesTheJobQueue(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://agencysync@"+loopback.FreeAddr(t)+"/queue?connect_timeout=2&sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	w := &worker{opts: Options{Pool: pool}, log: zaptest.NewLogger(t)}
	srv := httptest.NewServer(w.mux())
	t.Cleanup(srv.Close)
	for path, want := range map[string]struct {
		status int
		text   string
	}{
		"/readyz":  {http.StatusServiceUnavailable, "not ready: the job queue's database does not answer: "},
		"/healthz": {http.StatusOK, "ok\n"},
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want.status || !strings.HasPrefix(string(b), want.text) {
			t.Errorf("%s: %d %q, want %d %q", path, resp.StatusCode, b, want.status, want.text)
		}
	}
}
