package config

import (
	"fmt"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Setting is one variable's value in force, for `agencysync config
// --effective`: Value is printable (a secret shows only its length) and
// Source says where it came from.
type Setting struct {
	Name   string
	Value  string // "(unset)" when empty
	Source string // "environment", "file (NAME_FILE)", "default" or "unset"
}

// Effective lists every variable's value in force in c, in Variables order,
// with lookup (the environment c was loaded from) telling where each came
// from. Secrets never appear: only "set (N chars)", and for DATABASE_URL its
// host and database.
func (c *Config) Effective(lookup func(string) (string, bool)) []Setting {
	rv := reflect.ValueOf(c).Elem()
	out := make([]Setting, 0, len(Variables()))
	for _, v := range Variables() {
		s := Setting{Name: v.Name, Source: "default"}
		if val, ok := lookup(v.Name); ok && val != "" {
			s.Source = "environment"
		} else if path, ok := lookup(v.Name + "_FILE"); ok && path != "" && v.Secret {
			s.Source = "file (" + v.Name + "_FILE)"
		} else if v.Default == "" {
			s.Source = "unset"
		}
		f := rv.FieldByName(v.Field)
		if s.Source == "unset" && !f.IsZero() {
			// Filled in at load: SYNC_PRIORITIES the default order,
			// WAREHOUSE_LOCAL_DIR the private cluster's folder.
			s.Source = "default"
			if v.Name == "WAREHOUSE_LOCAL_DIR" {
				s.Source = "default (DATABASE_URL unset)"
			}
		}
		s.Value = printable(f, v)
		if s.Value == "" || (s.Source == "unset" && f.IsZero()) {
			s.Value = "(unset)"
		}
		out = append(out, s)
	}
	return out
}

// printable renders a field's value; secrets show only their length.
func printable(f reflect.Value, v Variable) string {
	if sec, ok := f.Interface().(Secret); ok {
		if sec.Value() == "" {
			return ""
		}
		text := fmt.Sprintf("set (%d chars)", len(sec.Value()))
		if v.Name == "DATABASE_URL" {
			if u, err := url.Parse(sec.Value()); err == nil && u.Host != "" {
				text += fmt.Sprintf(", host %s, database %s", u.Host, strings.TrimPrefix(u.Path, "/"))
			}
		}
		return text
	}
	switch x := f.Interface().(type) {
	case time.Duration:
		return x.String()
	case Location:
		if x.Location == nil {
			return ""
		}
		return x.String()
	case fmt.Stringer:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	case int, int64:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(f.Interface())
}
