package cli

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/engine"
	"github.com/agencysync/agencysync/load"
	"github.com/agencysync/agencysync/notify"
)

// notifyDrain bounds how long a command waits, after its run is recorded,
// for its notification to be delivered before it exits.
const notifyDrain = 10 * time.Second

// runner returns the engine, wrapped so that it notifies SYNC_NOTIFY_URL when
// that is set, and the function that drains the notifications (call it once
// the runs are done; it waits at most notifyDrain).
func (a *app) runner(x *wired) (engine.Runner, func(), error) {
	url := a.cfg.NotifyURL.Value()
	if url == "" {
		return x.eng, func() {}, nil
	}
	n, err := notify.New(notify.Options{URL: url, Redact: x.eng.Redact, Secrets: a.cfg.Secrets(), Logger: a.log})
	if err != nil {
		return nil, nil, err
	}
	store, err := load.New(x.w.Pool, load.Config{Schema: x.w.Schema, Logger: a.log})
	if err != nil {
		_ = n.Close(context.Background())
		return nil, nil, err
	}
	r := notify.Notifying(x.eng, store, n, notify.RunOptions{Schema: x.w.Schema, Redact: x.eng.Redact, Logger: a.log})
	drain := func() {
		ctx, cancel := context.WithTimeout(context.Background(), notifyDrain)
		defer cancel()
		if err := n.Close(ctx); err != nil {
			a.log.Warn("notifications not delivered before exit", zap.Error(err))
		}
	}
	return r, drain, nil
}
