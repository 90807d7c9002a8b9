package childproc

import (
	"errors"
	"fmt"
	"os"
)

// Signal sends sig to the worker unless it has exited (then it does
// nothing): the reliability suite stops runs with SIGTERM as a scheduler
// does, and collects them with Wait.
func (w *Worker) Signal(sig os.Signal) error {
	if !w.Running() {
		return nil
	}
	if err := w.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) && w.Running() {
		return fmt.Errorf("signal agencysync: %w", err)
	}
	return nil
}
