package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"
)

// browser is a headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: JSON messages ending in NUL, commands on
// the child's fd 3, answers and events on its fd 4), so that a test can
// read a page's DOM again and again while the page lives, with no
// WebSocket client.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      *os.File // our end of fd 3
	out     *bufio.Reader
	mu      sync.Mutex
	next    int
	session string
}

// openBrowser starts Chromium on url (a private profile, the flags of
// every Chromium these tests start) and attaches to the page; the browser
// is stopped when the test ends.
func openBrowser(t *testing.T, url string) *browser {
	t.Helper()
	bin := chromium(t)
	cmdIn, ourIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ourOut, cmdOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	args := append(slices.Clone(chromiumFlags), "--user-data-dir="+chromiumProfile(t), "--remote-debugging-pipe", "about:blank")
	cmd := exec.Command(bin, args...)
	cmd.ExtraFiles = []*os.File{cmdIn, cmdOut} // fds 3 and 4
	inOwnGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	cmdIn.Close()
	cmdOut.Close()
	b := &browser{t: t, cmd: cmd, in: ourIn, out: bufio.NewReader(ourOut)}
	t.Cleanup(func() {
		_ = b.in.Close()
		killGroup(cmd)
		_ = cmd.Wait()
		_ = ourOut.Close()
	})
	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("", "Target.createTarget", map[string]any{"url": url}, &target)
	var att struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att)
	b.session = att.SessionID
	return b
}

// call sends one command (to the page's session when session is set) and
// decodes its result into result, skipping the events in between. A
// browser that does not answer within a minute fails the test.
func (b *browser) call(session, method string, params any, result any) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	id := b.next
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		b.t.Fatalf("%s: write to chromium: %v", method, err)
	}
	type reply struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	got := make(chan reply, 1)
	fail := make(chan error, 1)
	go func() {
		for {
			line, err := b.out.ReadBytes(0)
			if err != nil {
				fail <- err
				return
			}
			var r reply
			if json.Unmarshal(line[:len(line)-1], &r) == nil && r.ID == id {
				got <- r
				return
			}
		}
	}()
	select {
	case r := <-got:
		if r.Error != nil {
			b.t.Fatalf("%s: %s", method, r.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(r.Result, result); err != nil {
				b.t.Fatalf("%s: decode %s: %v", method, r.Result, err)
			}
		}
	case err := <-fail:
		b.t.Fatalf("%s: read from chromium: %v", method, err)
	case <-time.After(time.Minute):
		b.t.Fatalf("%s: chromium did not answer within a minute", method)
	}
}

// eval evaluates a JavaScript expression in the page and decodes its JSON
// value (the expression returns JSON.stringify(...)) into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	var res struct {
		Result struct {
			Type  string `json:"type"`
			Value any    `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if res.ExceptionDetails != nil {
		b.t.Fatalf("evaluate %s: %s", expr, res.ExceptionDetails.Text)
	}
	s, ok := res.Result.Value.(string)
	if !ok {
		b.t.Fatalf("evaluate %s: %s %v, want a JSON string", expr, res.Result.Type, res.Result.Value)
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
}

// waitFor reads the page with read until ok says it holds, every 100 ms;
// stop (the run ended) or a deadline of minutes (a failure, not a budget)
// ends the wait with the last reading.
func waitFor[T any](ctx context.Context, read func() T, ok func(T) bool) (T, error) {
	var last T
	for {
		last = read()
		if ok(last) {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("gave up waiting: %w", errors.Join(ctx.Err(), context.Cause(ctx)))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
