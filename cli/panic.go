package cli

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/agencysync/agencysync/config"
	"github.com/agencysync/agencysync/logging"
)

// reportPanic, deferred in Main, turns a panic of the command's goroutine
// into exit 1 with the panic value and stack printed redacted of every
// configured secret (Go's own report would print them as they are).
func reportPanic(w io.Writer, cfg func() *config.Config, code *int) {
	v := recover()
	if v == nil {
		return
	}
	var r *logging.Redactor
	if c := cfg(); c != nil {
		r = logging.NewRedactor(c.RedactionSecrets()...)
	}
	fmt.Fprintf(w, "agencysync: panic: %s\n%s", r.String(fmt.Sprint(v)), r.String(string(debug.Stack())))
	*code = ExitFailure
}
