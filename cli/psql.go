package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"

	"go.uber.org/zap"

	"github.com/agencysync/agencysync/migrations"
	"github.com/agencysync/agencysync/warehouse"
)

// runPsql opens psql on the warehouse: DATABASE_URL, or the private cluster
// (started for as long as psql runs when it is not running, and stopped after
// only then), with search_path on the warehouse schema. Every argument goes to
// psql; psql's exit code is agencysync's.
func runPsql(ctx context.Context, a *app, args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(a.env.Stderr, "usage: agencysync psql [psql arguments], e.g. agencysync psql -c '\\dt' (list the warehouse's tables)")
		fmt.Fprintln(a.env.Stderr, "psql connects to the warehouse (DATABASE_URL, or the private cluster) with search_path set to WAREHOUSE_SCHEMA.")
		return nil
	}
	bin, err := warehouse.PsqlPath(a.cfg.PGBinDir)
	if err != nil {
		return fmt.Errorf("run psql: %w", err)
	}
	dsn := a.cfg.DatabaseURL.Value()
	if dsn == "" {
		dir, err := a.cfg.PrivateClusterDir()
		if err != nil {
			return err
		}
		c, err := warehouse.StartLocal(ctx, warehouse.LocalOptions{DataDir: dir, BinDir: a.cfg.PGBinDir, Logger: a.log})
		if err != nil {
			return fmt.Errorf("start private warehouse: %w", err)
		}
		defer func() {
			if err := c.Stop(); err != nil {
				a.log.Warn("stop private warehouse", zap.Error(err))
			}
		}()
		dsn = c.DSN()
	}
	connArgs, connEnv, err := psqlConnection(dsn, a.cfg.WarehouseSchema)
	if err != nil {
		return err
	}
	// Not CommandContext: Ctrl-C reaches psql from the terminal (it cancels a
	// query there), and psql decides when it ends.
	cmd := exec.Command(bin, append(connArgs, args...)...)
	cmd.Env = append(psqlBaseEnv(), connEnv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.env.Stdin, a.env.Stdout, a.env.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return &exitError{code: ee.ExitCode()}
	default:
		return fmt.Errorf("run psql: %w", err)
	}
}

// psqlBaseEnv is the process environment without the libpq variables that
// would contradict the warehouse's connection.
func psqlBaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE", "PGOPTIONS", "PGDATABASE", "PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// psqlConnection turns a postgres:// URL into psql's --dbname argument with
// search_path on schema, and the environment that carries the password
// (PGPASSWORD, so that it never shows on a command line). Errors never quote
// the URL: it may hold a password.
func psqlConnection(dsn, schema string) (args, env []string, err error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, nil, errors.New("run psql: DATABASE_URL is not a postgres:// URL")
	}
	q := u.Query()
	password, hasPassword := "", false
	if u.User != nil {
		password, hasPassword = u.User.Password()
		u.User = url.User(u.User.Username())
	}
	if p := q.Get("password"); p != "" {
		password, hasPassword = p, true
		q.Del("password")
	}
	opts := strings.TrimSpace(q.Get("options") + " " + migrations.PsqlOption(schema))
	q.Set("options", opts)
	u.RawQuery = q.Encode()
	if hasPassword {
		env = append(env, "PGPASSWORD="+password)
	}
	return []string{"--dbname=" + u.String()}, env, nil
}
