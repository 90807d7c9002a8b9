package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
)

// attempt sends cl once: it takes a request of the budget, waits for the
// pacer, counts the request, sends it and hands a 2xx body to onOK. A
// request that never left the machine (no connection to the host) is given
// back to the budget and the counter.
func (c *Client) attempt(ctx context.Context, cl *call, attempt int, onOK func([]byte) error) (err error) {
	pc, sl, err := c.admit(ctx, cl)
	if err != nil {
		return err
	}
	tr := &sendTrace{sl: sl, base: time.Now()}
	defer tr.done()
	cnt, err := c.countAttempt(ctx)
	if err != nil {
		tr.cancel()
		c.budget.refund()
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := c.newRequest(rctx, cl, tr)
	if err != nil {
		return err
	}
	start := time.Now()
	info := RequestInfo{Endpoint: cl.endpoint, Method: cl.method, Page: cl.page, Attempt: attempt}
	defer func() { c.finishAttempt(ctx, cl, tr, pc, &info, start, err) }()
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil && !tr.conn.Load() {
			info.Unsent = true
			c.unsent(ctx, cl, tr, cnt)
			return c.unreachableError(cl, err)
		}
		return c.transportError(ctx, rctx, cl, "send request", err)
	}
	defer resp.Body.Close()
	info.Status = resp.StatusCode
	if c.clock != nil && c.clock.Observe(resp.Header.Get("Date"), start, time.Now()) {
		c.recount(ctx, cnt.at, cnt.off)
	}
	return c.answer(ctx, rctx, cl, resp, tr, &info, onOK)
}

// admit takes a request of the budget and waits for the pacer (of the
// communications endpoint when it has its own): it returns the pacer and
// the request's slot, or why the request is not sent.
func (c *Client) admit(ctx context.Context, cl *call) (*pacer, *slot, error) {
	if !c.budget.take() {
		return nil, nil, ErrBudgetExhausted
	}
	pc := c.pacer
	if cl.comms && c.commsPacer != nil {
		pc = c.commsPacer
	}
	sl, err := pc.wait(ctx)
	if err != nil {
		c.budget.refund()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("wait for rate limiter: %w", err)
	}
	if err := c.quotaOut.refused(cl, time.Now()); err != nil {
		// Another request was just refused for the daily quota: this one
		// is not sent (nor counted).
		sl.release(time.Time{}, 0)
		c.budget.refund()
		return nil, nil, err
	}
	return pc, sl, nil
}

// counted is when a request was counted: the service clock's time and
// offset then (zero without a clock).
type counted struct {
	at  time.Time
	off time.Duration
}

// countAttempt counts the request about to be sent with the counter.
func (c *Client) countAttempt(ctx context.Context) (counted, error) {
	var cnt counted
	if c.clock != nil {
		cnt.at = c.clock.Now()
		cnt.off, _ = c.clock.Offset()
	}
	if c.counter != nil {
		if err := c.counter.CountRequest(ctx); err != nil {
			return cnt, fmt.Errorf("count request: %w", err)
		}
	}
	return cnt, nil
}

// newRequest builds cl's request with its headers and key, traced by tr.
func (c *Client) newRequest(rctx context.Context, cl *call, tr *sendTrace) (*http.Request, error) {
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(tr.attach(rctx), cl.method, cl.url, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %s", c.redact(err.Error()))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "agencysync-extract")
	if cl.comms {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Workflow-Key", c.commsKey)
		req.Header.Set(c.wfHeader, c.workflowID)
		if c.executionID != "" {
			req.Header.Set("X-Workflow-Execution-Id", c.executionID)
		}
	} else {
		req.Header.Set("Authorization", c.apiKey)
	}
	return req, nil
}

// finishAttempt books an attempt once it is over: the transport's own
// resends, the answer time the pacer learns from, and the hook and debug
// line of RequestInfo.
func (c *Client) finishAttempt(ctx context.Context, cl *call, tr *sendTrace, pc *pacer, info *RequestInfo, start time.Time, err error) {
	// net/http re-sends an idempotent request by itself when a reused
	// connection turns out dead; each send is a request the service may
	// count, so resends are counted too (after the fact: they were not ours
	// to refuse).
	if extra := int(tr.writes.Load()) - 1; extra > 0 {
		info.Resends = extra
		c.countResends(ctx, extra)
		c.log.Warn("request re-sent by the HTTP transport after a dead connection",
			zap.String("endpoint", cl.endpoint), zap.Int("page", cl.page), zap.Int("resends", extra))
	}
	info.Duration = time.Since(start)
	if err == nil {
		pc.observe(info.Duration)
	}
	info.Err = err
	info.ErrorClass = errorClass(err)
	c.report(info)
}

// unsent gives back a request that never left the machine: to the budget,
// to the counter (when it can take one back) and to the pacer, since the
// service never saw it.
func (c *Client) unsent(ctx context.Context, cl *call, tr *sendTrace, cnt counted) {
	tr.cancel()
	c.budget.refund()
	if r, ok := c.counter.(QuotaRefunder); ok {
		if err := r.UncountRequest(context.WithoutCancel(ctx), cnt.at); err != nil {
			c.log.Warn("could not take back a request that was never sent; it stays counted",
				zap.String("endpoint", cl.endpoint), zap.String("error", c.redact(err.Error())))
		}
	}
}

// answer reads the response's body within the memory budget and judges
// it: an error status, a body too large or cut short, else onOK's verdict
// on the body (redacted of every key first).
func (c *Client) answer(ctx, rctx context.Context, cl *call, resp *http.Response, tr *sendTrace, info *RequestInfo, onOK func([]byte) error) error {
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	limit, known := c.maxBody, resp.ContentLength
	if !ok {
		limit = min(limit, maxErrorBody)
		known = -1 // read what fits; the message is at the start
	}
	var src io.Reader = resp.Body
	enc, name, unknown := declaredCharset(resp.Header.Get("Content-Type"))
	if enc != nil {
		// Decoded as it is read: the cap counts the decoded bytes.
		src, known, info.Charset = enc.NewDecoder().Reader(src), -1, name
	}
	info.UnknownCharset = unknown
	bd, n, rerr := c.mem.readBody(rctx, io.LimitReader(src, limit+1), known, limit)
	defer bd.release()
	tr.done() // the answer is in: free the slot now, not after decoding
	info.Bytes = int(n)
	if !ok {
		var b []byte
		if bd != nil {
			b = bd.b
		}
		err := c.statusError(cl, resp, b)
		var ae *APIError
		if errors.As(err, &ae) && ae.Kind == ErrDailyQuota {
			c.quotaOut.close(ae, time.Now())
		}
		return err
	}
	switch {
	case errors.Is(rerr, errTooLarge):
		return c.tooLarge(cl)
	case rerr != nil && (ctx.Err() != nil || rctx.Err() != nil):
		return c.transportError(ctx, rctx, cl, "read body", rerr)
	case rerr != nil:
		return &ResponseError{Endpoint: cl.endpoint, Page: cl.page, Kind: ErrMalformedResponse,
			Reason: "truncated body: " + c.redact(rerr.Error())}
	}
	if enc == nil && !utf8.Valid(bd.b) {
		info.InvalidUTF8 = true
		info.CharsetHint = strings.Join(cleanCharsets(bd.b), ", ")
	}
	return c.judge(cl, resp, bd.b, onOK)
}

// judge hands a complete 2xx body to onOK, redacted of every key, and
// redacts what onOK's error quotes of it.
func (c *Client) judge(cl *call, resp *http.Response, body []byte, onOK func([]byte) error) error {
	if cl.link != nil {
		*cl.link = nextLink(resp.Header.Values("Link"))
	}
	// A key the service echoes in what it serves (a signed link, a note)
	// is removed before anything splits, stores or logs the records.
	answer, echoed := c.redactor.Body(body)
	if echoed {
		c.log.Warn("the service echoed an API key in a response; it was redacted before the records were read",
			zap.String("endpoint", cl.endpoint), zap.Int("page", cl.page))
	}
	err := onOK(answer)
	if err == nil {
		return nil
	}
	var re *ResponseError
	if errors.As(err, &re) {
		if re.notJSON != nil {
			re.Reason = re.notJSON.reason(func(h string) string { return c.redactor.Clip(h, snippetLen) })
			re.notJSON = nil
		} else {
			re.Reason = c.redact(re.Reason)
		}
	}
	var rec *RecordError
	if errors.As(err, &rec) {
		c.redactRecord(rec)
	}
	var ae *APIError
	if errors.As(err, &ae) {
		c.redactAPIError(ae)
		ae.Setting, ae.Comms = c.keySetting(cl), cl.comms
		ae.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return err
}

// sendTrace follows one request through the transport: whether a
// connection to the host was made, when the request was written (and how
// often: the transport re-sends on a dead reused connection) and when its
// answer started, for the pacer's window guard.
type sendTrace struct {
	sl   *slot
	base time.Time // times are offsets from base, on the monotonic clock
	// wroteAt and firstByteAt are offsets + 1; 0 while not seen.
	wroteAt, firstByteAt atomic.Int64
	writes               atomic.Int32
	conn                 atomic.Bool // a connection to the host was made
}

// attach returns ctx carrying the trace's hooks.
func (t *sendTrace) attach(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { t.conn.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) {
			t.writes.Add(1)
			t.wroteAt.Store(int64(time.Since(t.base)) + 1)
		},
		GotFirstResponseByte: func() { t.firstByteAt.Store(int64(time.Since(t.base)) + 1) },
	})
}

// done releases the pacer's slot (once): from the request's estimated
// arrival when it was written and answered, else held a window from now.
func (t *sendTrace) done() {
	w, f := t.wroteAt.Load(), t.firstByteAt.Load()
	if w == 0 || f <= w {
		t.sl.release(time.Time{}, 0)
		return
	}
	t.sl.release(t.base.Add(time.Duration(w-1)), time.Duration(f-w))
}

// cancel releases the slot of a request the service never saw (once).
func (t *sendTrace) cancel() { t.sl.cancel() }
