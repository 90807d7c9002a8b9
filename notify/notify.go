// Package notify posts short messages to a webhook (SYNC_NOTIFY_URL) as
// Slack-compatible JSON, {"text": "..."}, without ever holding up the caller:
// Send queues the message for one background sender owned by the Notifier,
// which retries with backoff and gives up after a few attempts. Every message
// is redacted before it leaves, and the webhook's URL, itself a secret, is
// never logged whole.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ErrClosed means Send was called after Close.
var ErrClosed = errors.New("notifier closed")

// ErrQueueFull means a message was dropped because the sender is behind.
var ErrQueueFull = errors.New("notification queue full")

// Options configures a Notifier.
type Options struct {
	// URL is the webhook (SYNC_NOTIFY_URL). Required.
	URL string
	// Redact removes secrets from a message (the API client's redaction);
	// nil leaves it to Secrets.
	Redact func(string) string
	// Secrets are further values replaced by [REDACTED] in every message
	// (the database URL, the webhook URL itself).
	Secrets []string
	// Attempts is how many times a message is tried (default 4).
	Attempts int
	// Backoff is the wait after the first failed attempt, doubled after each
	// (default 1s, at most MaxBackoff, default 30s).
	Backoff, MaxBackoff time.Duration
	// Timeout bounds each attempt (default 10s).
	Timeout time.Duration
	// Queue is how many messages may wait (default 16); more are dropped.
	Queue int
	// HTTPClient sends the requests (default a client of its own).
	HTTPClient *http.Client
	// Logger receives deliveries and failures (nil: none).
	Logger *zap.Logger
}

// Notifier delivers messages to one webhook in the background.
type Notifier struct {
	opts   Options
	safe   string // the URL as it may be logged: scheme and host
	redact *strings.Replacer
	log    *zap.Logger

	mu     sync.Mutex
	closed bool
	queue  chan string
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
}

// New validates opts and starts the Notifier's sender. Close stops it.
func New(opts Options) (*Notifier, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("create notifier: the webhook is not an absolute http(s) URL")
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 4
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Queue <= 0 {
		opts.Queue = 16
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	var pairs []string
	for _, s := range append([]string{opts.URL, u.Path, u.RawQuery}, opts.Secrets...) {
		if len(s) >= 4 && s != "/" {
			pairs = append(pairs, s, "[REDACTED]")
		}
	}
	// A URL among the secrets (the webhook, the database's) may show up by
	// its password alone.
	for _, s := range append([]string{opts.URL}, opts.Secrets...) {
		if su, err := url.Parse(s); err == nil && su.User != nil {
			if p, ok := su.User.Password(); ok && len(p) >= 4 {
				pairs = append(pairs, p, "[REDACTED]")
			}
		}
	}
	n := &Notifier{opts: opts, safe: u.Scheme + "://" + u.Host, redact: strings.NewReplacer(pairs...),
		queue: make(chan string, opts.Queue), done: make(chan struct{})}
	n.log = log.With(zap.String("webhook", n.safe))
	n.ctx, n.cancel = context.WithCancel(context.Background())
	go n.loop()
	return n, nil
}

// Clean returns text as it would be sent: redacted.
func (n *Notifier) Clean(text string) string {
	if n.opts.Redact != nil {
		text = n.opts.Redact(text)
	}
	return n.redact.Replace(text)
}

// Send queues text for delivery and returns at once. It drops the message
// (and says so) when the Notifier is closed or its queue is full.
func (n *Notifier) Send(text string) error {
	text = n.Clean(text)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return fmt.Errorf("send notification: %w", ErrClosed)
	}
	select {
	case n.queue <- text:
		return nil
	default:
		n.log.Warn("notification dropped: the webhook is too slow", zap.Int("queued", len(n.queue)))
		return fmt.Errorf("send notification: %w", ErrQueueFull)
	}
}

// Close stops accepting messages and waits for the queued ones to be
// delivered or given up until ctx ends; then it abandons the rest.
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.queue)
	}
	n.mu.Unlock()
	select {
	case <-n.done:
		n.cancel()
		return nil
	case <-ctx.Done():
		n.cancel()
		<-n.done
		return fmt.Errorf("close notifier: undelivered notifications abandoned: %w", ctx.Err())
	}
}

func (n *Notifier) loop() {
	defer close(n.done)
	for text := range n.queue {
		if n.ctx.Err() != nil {
			n.log.Warn("notification abandoned: shutting down")
			continue
		}
		n.deliver(text)
	}
}

// deliver tries text up to Attempts times with exponential backoff; a 4xx
// other than 408 and 429 is not retried.
func (n *Notifier) deliver(text string) {
	body, err := json.Marshal(struct {
		Text string `json:"text"`
	}{text})
	if err != nil {
		n.log.Error("encode notification", zap.Error(err))
		return
	}
	wait := n.opts.Backoff
	for attempt := 1; ; attempt++ {
		retry, err := n.post(body)
		if err == nil {
			n.log.Info("notification delivered", zap.Int("attempt", attempt))
			return
		}
		if !retry || attempt >= n.opts.Attempts {
			n.log.Warn("notification not delivered", zap.Int("attempts", attempt), zap.Error(err))
			return
		}
		n.log.Debug("notification attempt failed; retrying", zap.Int("attempt", attempt), zap.Duration("wait", wait), zap.Error(err))
		select {
		case <-n.ctx.Done():
			n.log.Warn("notification abandoned: shutting down", zap.Error(err))
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, n.opts.MaxBackoff)
	}
}

// post sends one attempt; retry says whether another attempt may succeed.
func (n *Notifier) post(body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.opts.URL, bytes.NewReader(body))
	if err != nil {
		return false, errors.New("build notification request: " + n.Clean(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.opts.HTTPClient.Do(req)
	if err != nil {
		// url.Error quotes the whole URL: keep only the cause, redacted.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return true, errors.New("post notification: " + n.Clean(err.Error()))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("post notification: webhook answered %s", resp.Status)
	}
	return false, fmt.Errorf("post notification: webhook answered %s", resp.Status)
}
