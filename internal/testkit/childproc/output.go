package childproc

// StderrSoFar returns what the running worker wrote to stderr so far (a
// long-running command's log, read while it runs).
func (w *Worker) StderrSoFar() []byte { return w.stderr.Bytes() }
