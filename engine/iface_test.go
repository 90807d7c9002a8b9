package engine

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/agencysync/agencysync/extract"
	"github.com/agencysync/agencysync/internal/testkit/sandbox"
)

// interfaceTasks are e's tasks of the main interface and those of the
// communications endpoint, in their default order.
func interfaceTasks(e *Engine) (main, comms []Task) {
	for _, t := range e.set.Priorities {
		if e.windowTask(t) {
			comms = append(comms, t)
		} else {
			main = append(main, t)
		}
	}
	return main, comms
}

// assertInterfaceEnded checks that one task of same failed with want, that
// the others of same did not run (or had nothing to do before it), and that
// none of the tasks of others failed.
func assertInterfaceEnded(t *testing.T, res *Result, same []Task, want error, others []Task) {
	t.Helper()
	if res.Status != StatusFailed || !errors.Is(res.Err, want) {
		t.Fatalf("run %s, err %v: want failed with %v", res.Status, res.Err, want)
	}
	failed := 0
	for _, task := range same {
		err, ok := res.StreamErrors[task]
		var nr *notRunError
		switch {
		case !ok, errors.As(err, &nr):
		case errors.Is(err, want):
			failed++
		default:
			t.Errorf("%s: %v, want %v or not run", task, err, want)
		}
	}
	if failed != 1 {
		t.Errorf("%d tasks failed with %v, want 1 (the others not run): %v", failed, want, res.StreamErrors)
	}
	for _, task := range others {
		if err := res.StreamErrors[task]; err != nil {
			t.Errorf("%s of the other interface failed: %v", task, err)
		}
	}
}

// TestRefusedMainKeyLeavesCommunicationsToLand: with the main interface's
// key refused (the sandbox's refuse_main_key twist) and the communications
// key valid, the run fails with ErrUnauthorized after one main-interface
// request, and every e-mail lands.
func TestRefusedMainKeyLeavesCommunicationsToLand(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	on := true
	if err := h.sb.SetTwists(sandbox.Twists{HostileTwists: sandbox.HostileTwists{RefuseMainKey: &on}}); err != nil {
		t.Fatal(err)
	}
	res := h.run(Request{})
	mainTasks, commsTasks := interfaceTasks(h.eng)
	assertInterfaceEnded(t, res, mainTasks, extract.ErrUnauthorized, commsTasks)
	st := h.sb.Stats()
	if main := st.Requests - st.ByEndpoint["communications"]; main != 1 {
		t.Errorf("%d main-interface requests, want 1 (the key is refused once)", main)
	}
	want, _ := h.truth().Counts("communications")
	if got := h.count("SELECT count(*) FROM " + h.table("emails")); got != want || want == 0 {
		t.Errorf("emails: %d landed, truth has %d", got, want)
	}
	if got := h.count("SELECT count(*) FROM " + h.table("brands")); got != 0 {
		t.Errorf("brands: %d rows with a refused key", got)
	}
}

// TestRefusedCommsKeyLeavesMainInterfaceToLand: the other way round, the
// communications key refused: every main-interface stream lands.
func TestRefusedCommsKeyLeavesMainInterfaceToLand(t *testing.T) {
	t.Parallel()
	o := smallSandbox()
	h := newHarness(t, o, nil)
	bad := o
	bad.CommsKey = "not-the-comms-key-0000"
	h.opts = bad
	h.eng = h.engine(nil)
	res := h.run(Request{})
	mainTasks, commsTasks := interfaceTasks(h.eng)
	assertInterfaceEnded(t, res, commsTasks, extract.ErrUnauthorized, mainTasks)
	if n := h.sb.Stats().ByEndpoint["communications"]; n != 1 {
		t.Errorf("%d communications requests, want 1", n)
	}
	h.assertListsEqualTruth(h.truth(), false)
}

// TestUnreachableMainHostEndsItsTasksUnbilled: a main interface on a port
// nothing listens on fails its first task with ErrUnreachable naming the
// address's setting, runs none of its other tasks, bills none of its
// attempts, and the e-mails land.
func TestUnreachableMainHostEndsItsTasksUnbilled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, smallSandbox(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	eng, ledger := h.wire(wiring{apiURL: closed})
	res := runEngine(context.Background(), t, eng, Request{})
	mainTasks, commsTasks := interfaceTasks(eng)
	assertInterfaceEnded(t, res, mainTasks, extract.ErrUnreachable, commsTasks)
	if msg := res.Err.Error(); !strings.Contains(msg, "cannot reach BaseURL ("+closed+")") {
		t.Errorf("run error %q does not name the address", msg)
	}
	spent, err := ledger.Spent(context.Background(), ledger.Today())
	if err != nil {
		t.Fatal(err)
	}
	if sent := h.sb.Stats().Requests; int64(spent) != sent || res.RequestsUsed != spent {
		t.Errorf("ledger %d, requests_used %d, sandbox saw %d: only requests that left may be billed", spent, res.RequestsUsed, sent)
	}
	want, _ := h.truth().Counts("communications")
	if got := h.count("SELECT count(*) FROM " + h.table("emails")); got != want || want == 0 {
		t.Errorf("emails: %d landed, truth has %d", got, want)
	}
}
