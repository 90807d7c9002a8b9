package cli

import (
	"context"
	"fmt"

	"github.com/agencysync/agencysync/config"
)

// runConfig prints the configuration reference, or with --effective the
// values in force (environment, _FILE secrets, defaults) with secrets masked,
// and the field map that AGENCY_FIELD_MAP_FILE and AGENCY_FIELD_MAP make.
func runConfig(ctx context.Context, a *app, args []string) error {
	fs := newFlags("config", a)
	effective := fs.Bool("effective", false, "print the values in force (secrets masked) instead of the reference")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if !*effective {
		return runConfigHelp(ctx, a, nil)
	}
	cfg, err := config.LoadFrom(ctx, config.Environment{Lookup: a.env.Lookup, ReadFile: a.env.ReadFile}, Known())
	if err != nil {
		return err
	}
	a.cfg = cfg
	for _, s := range cfg.Effective(a.env.Lookup) {
		fmt.Fprintf(a.env.Stdout, "%-28s %-44s %s\n", s.Name, s.Value, s.Source)
	}
	if len(cfg.FieldMap) > 0 {
		// What the two field map variables make together.
		fmt.Fprintf(a.env.Stdout, "%-28s %s\n", "field map in force", config.FieldMapPairs(cfg.FieldMap))
	}
	if len(cfg.Paging) > 0 {
		// What AGENCY_PAGING and the file's paging: make together.
		fmt.Fprintf(a.env.Stdout, "%-28s %s\n", "paging in force", cfg.Paging)
	}
	return nil
}
