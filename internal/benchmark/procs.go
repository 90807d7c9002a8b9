package benchmark

import (
	"context"
	"strconv"
	"time"

	"github.com/agencysync/agencysync/internal/testkit/childproc"
)

// Keys the harness gives the sandbox and the worker (a local sandbox only).
const (
	apiKey     = "agencybench-api-key"
	commsKey   = "agencybench-comms-key"
	adminToken = "agencybench-admin"
)

// Sandbox is a running agencysandbox with the harness's keys, and the
// readers of its truth that the figures need (Head, CommsPages).
type Sandbox struct {
	*childproc.Sandbox
}

// startSandbox starts bin (agencysandbox) with o and the harness's keys on
// free loopback ports, and waits up to two minutes until it listens. Stop
// ends it.
func startSandbox(ctx context.Context, bin string, o childproc.SandboxOptions) (*Sandbox, error) {
	o.APIKey, o.CommsKey, o.AdminToken = apiKey, commsKey, adminToken
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	sb, err := childproc.StartSandbox(ctx, bin, o)
	if err != nil {
		return nil, err
	}
	return &Sandbox{sb}, nil
}

// WorkerEnv is childproc's worker environment for this sandbox with the
// service's daily quota and info logs.
func (s *Sandbox) WorkerEnv(dsn, schema string) map[string]string {
	env := s.Sandbox.WorkerEnv(dsn, schema)
	env["AGENCY_DAILY_QUOTA"] = strconv.Itoa(dailyQuota)
	env["LOG_LEVEL"] = "info"
	return env
}
