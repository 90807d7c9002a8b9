package fleet

import (
	"context"
	"log/slog"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapHandler is a slog.Handler writing to a zap logger: River logs through
// slog. River's info lines (leadership, queue start) go to debug: the
// fleet's own lines tell what an operator needs.
type zapHandler struct {
	log    *zap.Logger
	group  string
	fields []zap.Field
}

func newSlog(log *zap.Logger) *slog.Logger {
	return slog.New(&zapHandler{log: log.With(zap.String("component", "river"))})
}

func zapLevel(l slog.Level) zapcore.Level {
	switch {
	case l >= slog.LevelError:
		return zapcore.ErrorLevel
	case l >= slog.LevelWarn:
		return zapcore.WarnLevel
	default:
		return zapcore.DebugLevel
	}
}

func (h *zapHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.Core().Enabled(zapLevel(l))
}

func (h *zapHandler) Handle(_ context.Context, r slog.Record) error {
	fields := append([]zap.Field(nil), h.fields...)
	r.Attrs(func(a slog.Attr) bool {
		fields = append(fields, h.field(a))
		return true
	})
	if ce := h.log.Check(zapLevel(r.Level), r.Message); ce != nil {
		ce.Write(fields...)
	}
	return nil
}

func (h *zapHandler) field(a slog.Attr) zap.Field {
	key := a.Key
	if h.group != "" {
		key = h.group + "." + key
	}
	return zap.Any(key, a.Value.Resolve().Any())
}

func (h *zapHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &zapHandler{log: h.log, group: h.group, fields: append([]zap.Field(nil), h.fields...)}
	for _, a := range attrs {
		n.fields = append(n.fields, h.field(a))
	}
	return n
}

func (h *zapHandler) WithGroup(name string) slog.Handler {
	g := name
	if h.group != "" {
		g = h.group + "." + name
	}
	return &zapHandler{log: h.log, group: g, fields: h.fields}
}
