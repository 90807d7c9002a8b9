// Package loopback gives tests addresses on 127.0.0.1.
package loopback

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback host:port on which nothing listens: the port
// the system handed out a moment ago, closed again. It serves where port 0
// cannot be asked for (HTTP_ADDR refuses it) and as an address whose
// connections are refused.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
