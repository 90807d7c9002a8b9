// Package logging builds the zap logger agencysync injects everywhere: JSON when
// the output is not a terminal, a readable console format when it is.
package logging

import (
	"fmt"
	"io"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
)

// New returns a logger writing to w at level ("debug", "info", "warn",
// "error") in format ("json", "console" or "auto": console when w is a
// terminal, JSON otherwise). Every line is redacted of the given secrets (in
// every encoding a Redactor knows) as a last line of defence.
func New(w io.Writer, level, format string, secrets ...string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("parse log level: %w", err)
	}
	if format == "auto" {
		format = "json"
		if IsTerminal(w) {
			format = "console"
		}
	}
	var enc zapcore.Encoder
	switch format {
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		ec.TimeKey = "ts"
		enc = zapcore.NewJSONEncoder(ec)
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		if IsTerminal(w) {
			ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("parse log format: %q is not json, console or auto", format)
	}
	out := RedactWriter(zapcore.Lock(zapcore.AddSync(w)), secrets...)
	core := zapcore.NewCore(enc, out, lvl)
	return zap.New(core, zap.ErrorOutput(out)), nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
