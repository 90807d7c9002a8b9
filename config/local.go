package config

import (
	"path/filepath"
)

// RootLocalDir is the private cluster's data folder when agencysync runs as
// root: the server runs as an unprivileged user, which cannot reach root's
// home, so the folder lives under /var/lib.
const RootLocalDir = "/var/lib/agencysync/postgres"

// defaultLocalDir is WAREHOUSE_LOCAL_DIR's default, the private cluster's
// data folder. It never depends on the current directory:
// $XDG_DATA_HOME/agencysync/postgres when XDG_DATA_HOME is an absolute path,
// else $HOME/.local/share/agencysync/postgres, and RootLocalDir for root
// (euid 0). It is "" when neither is an absolute path.
func defaultLocalDir(lookup func(string) (string, bool), euid int) string {
	if euid == 0 {
		return RootLocalDir
	}
	if x, _ := lookup("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "agencysync", "postgres")
	}
	if home, _ := lookup("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "share", "agencysync", "postgres")
	}
	return ""
}

// defaultLocal fills WAREHOUSE_LOCAL_DIR when the private cluster is used
// (DATABASE_URL unset) and the variable is not set. When no default can be
// derived it stays empty: only a command that starts the private cluster
// needs it, and PrivateClusterDir says so then.
func (c *Config) defaultLocal(env Environment) {
	if c.DatabaseURL.Value() != "" || c.LocalDataDir != "" {
		return
	}
	euid := env.Geteuid
	if euid == nil {
		euid = osGeteuid
	}
	c.LocalDataDir = defaultLocalDir(env.Lookup, euid())
}

// PrivateClusterDir is the private cluster's data folder, for the commands
// that start it (DATABASE_URL unset): an *Error naming WAREHOUSE_LOCAL_DIR
// when it is unset and neither XDG_DATA_HOME nor HOME gives a default.
func (c *Config) PrivateClusterDir() (string, error) {
	if c.LocalDataDir == "" {
		return "", fieldError("LocalDataDir", "is required when DATABASE_URL is unset and neither XDG_DATA_HOME nor HOME is an absolute path")
	}
	return c.LocalDataDir, nil
}
