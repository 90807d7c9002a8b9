package sandbox

// TB is the part of testing.TB that StartT uses (the package does not
// import testing: cmd/agencysandbox links it).
type TB interface {
	Helper()
	Fatal(args ...any)
	Cleanup(func())
}

// StartT starts a sandbox with o on loopback ports for a test, and closes it
// when the test ends; it fails the test when the sandbox cannot start.
func StartT(t TB, o Options) *Server {
	t.Helper()
	sb, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Start("127.0.0.1:0", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}
