package extract

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
)

// unreachableAttempts bounds the attempts of a request whose host cannot be
// reached: a service restarting or a DNS blip gets a second and third try
// (the backoff's first waits, about 1.5 s in all by default), a mistyped
// address fails within seconds instead of after minutes of retries.
const unreachableAttempts = 3

// unreachableError is the error of a request that never left the machine
// (err from the transport, no connection made): it names the setting of
// the interface's address and what went wrong.
func (c *Client) unreachableError(cl *call, err error) error {
	setting, addr := c.names.BaseURL, c.base
	if cl.comms {
		setting, addr = c.names.CommsURL, c.comms
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err // without the request's URL
	}
	if errors.Is(cause, context.DeadlineExceeded) {
		// The per-request timeout, not the caller's context: not exposed.
		msg := fmt.Sprintf("cannot reach %s (%s): connecting timed out after %s; the request was not sent and is not counted against the quota",
			setting, c.redact(addr), c.timeout)
		return &NetworkError{Endpoint: cl.endpoint, Page: cl.page, Unreachable: true, Timeout: true, msg: msg}
	}
	msg := fmt.Sprintf("cannot reach %s (%s): %s: %s; the request was not sent and is not counted against the quota",
		setting, c.redact(addr), reachProblem(cause), c.redact(cause.Error()))
	return &NetworkError{Endpoint: cl.endpoint, Page: cl.page, Unreachable: true, msg: msg, cause: cause}
}

// reachProblem says in a few words why a connection could not be made.
func reachProblem(err error) string {
	var dns *net.DNSError
	var cv *tls.CertificateVerificationError
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ne net.Error
	switch {
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (nothing listens at that address)"
	case errors.As(err, &cv), errors.As(err, &rh), errors.As(err, &ua), errors.As(err, &hn),
		strings.Contains(err.Error(), "tls: "):
		return "the TLS handshake failed"
	case errors.As(err, &ne) && ne.Timeout():
		return "connecting timed out"
	}
	return "no connection could be made"
}
