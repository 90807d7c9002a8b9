package config

import (
	"context"
	"testing"
)

// TestLocalDataDirDefault: with DATABASE_URL unset, Load fills in the
// private cluster's data folder (never under the current directory), and a
// user without an absolute home must name one; with DATABASE_URL set there
// is none.
func TestLocalDataDirDefault(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  map[string]string
		euid int
		want string // "" with err: an error naming WAREHOUSE_LOCAL_DIR
		err  bool
	}{
		{"xdg", map[string]string{"XDG_DATA_HOME": "/x/data", "HOME": "/home/u"}, 1000, "/x/data/agencysync/postgres", false},
		{"home", map[string]string{"HOME": "/home/u"}, 1000, "/home/u/.local/share/agencysync/postgres", false},
		{"relative xdg is ignored (XDG spec)", map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/home/u"}, 1000, "/home/u/.local/share/agencysync/postgres", false},
		{"root: a folder the server's user can reach", map[string]string{"HOME": "/root", "XDG_DATA_HOME": "/root/.local/share"}, 0, RootLocalDir, false},
		{"set", map[string]string{"WAREHOUSE_LOCAL_DIR": "/srv/pg", "HOME": "/home/u"}, 1000, "/srv/pg", false},
		{"set, without a home", map[string]string{"WAREHOUSE_LOCAL_DIR": "/srv/pg"}, 1000, "/srv/pg", false},
		{"DATABASE_URL set: no private cluster", map[string]string{"DATABASE_URL": "postgres://u@db/w", "HOME": "/home/u"}, 1000, "", false},
		{"no home", map[string]string{}, 1000, "", true},
		{"relative home", map[string]string{"HOME": "rel"}, 1000, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := LoadFrom(context.Background(), Environment{Lookup: env(c.env), ReadFile: noFiles, Geteuid: func() int { return c.euid }}, testKnown)
			if c.err {
				// Loading succeeds (a command that never starts the
				// private cluster does not need the folder); starting it
				// is refused, naming the variable.
				if err != nil {
					t.Fatalf("load: %v; want no error until the private cluster is needed", err)
				}
				_, err = cfg.PrivateClusterDir()
				assertVariable(t, err, "WAREHOUSE_LOCAL_DIR")
				return
			}
			if err != nil || cfg.LocalDataDir != c.want {
				t.Fatalf("LocalDataDir %q, %v; want %q", cfg.LocalDataDir, err, c.want)
			}
			for _, s := range cfg.Effective(env(c.env)) {
				if s.Name != "WAREHOUSE_LOCAL_DIR" {
					continue
				}
				_, set := c.env["WAREHOUSE_LOCAL_DIR"]
				switch {
				case set && s.Source != "environment", !set && c.want != "" && s.Source != "default (DATABASE_URL unset)", c.want == "" && s.Value != "(unset)":
					t.Errorf("config --effective shows %+v", s)
				}
			}
		})
	}
}
