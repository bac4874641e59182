package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/o2i-service/o2i/internal/apikey"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/reqlog"
	"github.com/o2i-service/o2i/internal/store"
)

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// adminFlags is a flag set with --database-url, parsed from args.
type adminFlags struct {
	*flag.FlagSet
	dbURL *string
}

func newAdminFlags(name string, cfg Config, stderr io.Writer) adminFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return adminFlags{FlagSet: fs, dbURL: fs.String("database-url", cfg.DatabaseURL, "PostgreSQL URL (default O2I_DATABASE_URL)")}
}

func (f adminFlags) open(ctx context.Context) (*pgxpool.Pool, error) {
	return store.Open(ctx, *f.dbURL, 4)
}

// print opens the database, runs do and prints its result as JSON.
func (f adminFlags) print(ctx context.Context, w io.Writer, do func(*pgxpool.Pool) (any, error)) error {
	pool, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	v, err := do(pool)
	if err != nil {
		return err
	}
	return printJSON(w, v)
}

func (f adminFlags) parse(args []string) error {
	if err := f.Parse(args); err != nil {
		return errUsage
	}
	if f.NArg() > 0 {
		fmt.Fprintf(f.Output(), "unexpected arguments: %v\n", f.Args())
		return errUsage
	}
	return nil
}

func (f adminFlags) isSet(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			set = true
		}
	})
	return set
}

func migrateCmd(ctx context.Context, cfg Config, args []string, stdout io.Writer) error {
	f := newAdminFlags("migrate", cfg, stdout)
	if err := f.parse(args); err != nil {
		return err
	}
	pool, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	applied, err := store.Migrate(ctx, pool)
	if err != nil {
		return err
	}
	if applied == nil {
		applied = []string{}
	}
	return printJSON(stdout, map[string]any{"applied": applied})
}

func projectCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: o2i project create|set|show|reset-test-data ...\n")
		return errUsage
	}
	f := newAdminFlags("project "+args[0], cfg, stderr)
	switch args[0] {
	case "create":
		name := f.String("name", "", "project name (required)")
		testMode := f.Bool("test-mode", true, "test mode: documents are test documents")
		accounting := f.String("accounting", project.Accrual, "accrual or cash")
		if err := f.parse(args[1:]); err != nil {
			return err
		}
		return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) {
			p, err := project.Create(ctx, pool, *name, *testMode, *accounting)
			return p.Masked(), err
		})
	case "show":
		id := f.String("project", "", "project id (required)")
		if err := f.parse(args[1:]); err != nil {
			return err
		}
		return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) {
			p, err := project.Get(ctx, pool, *id)
			return p.Masked(), err
		})
	case "set":
		return projectSet(ctx, f, args[1:], stdout)
	case "reset-test-data":
		return resetTestData(ctx, cfg, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "unknown project command %q\n", args[0])
	return errUsage
}

// secretSettings are the settings that also have a -file flag: a secret
// given on the command line lands in the shell history.
var secretSettings = []string{"stripe-webhook-secret", "stripe-api-key"}

// stdin is where a -file flag of "-" reads from.
var stdin io.Reader = os.Stdin

// readSecret reads a secret from path ("-": standard input), at most 4 KiB,
// without the trailing line break.
func readSecret(path string) (string, error) {
	var r io.Reader = stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, 4097))
	if err != nil {
		return "", err
	}
	if len(b) > 4096 {
		return "", fmt.Errorf("more than 4 KiB: not a secret")
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func projectSet(ctx context.Context, f adminFlags, args []string, stdout io.Writer) error {
	id := f.String("project", "", "project id (required)")
	for _, sf := range project.Fields {
		switch sf.Kind {
		case "bool":
			def := sf.Name == "testMode"
			f.Bool(sf.Flag, def, "setting "+sf.Name)
		default:
			f.String(sf.Flag, "", "setting "+sf.Name+" (empty clears it)")
		}
	}
	secretFiles := map[string]*string{}
	for _, name := range secretSettings {
		secretFiles[name] = f.String(name+"-file", "", "read "+name+" from this file (- for standard input), so the secret stays out of the shell history")
	}
	if err := f.parse(args); err != nil {
		return err
	}
	for _, name := range secretSettings {
		if !f.isSet(name + "-file") {
			continue
		}
		if f.isSet(name) {
			return fmt.Errorf("--%s and --%s-file: give one of them", name, name)
		}
		v, err := readSecret(*secretFiles[name])
		if err != nil {
			return fmt.Errorf("--%s-file: %w", name, err)
		}
		if err := f.Set(name, v); err != nil {
			return err
		}
	}
	// The settings by their JSON names, as the console's forms send them:
	// internal/project checks and applies both alike.
	values := map[string]string{}
	for _, sf := range project.Fields {
		if f.isSet(sf.Flag) {
			values[sf.Name] = f.Lookup(sf.Flag).Value.String()
		}
	}
	return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) {
		p, err := project.Set(ctx, pool, *id, values, nil)
		return p.Masked(), flagError(err)
	})
}

// flagError names the command line's flag of a refused setting: the
// message is the one the console shows next to the field.
func flagError(err error) error {
	e := apperr.As(err)
	if e == nil || e.Kind != apperr.Validation || e.Field == "" {
		return err
	}
	if sf, ok := project.FieldNamed(e.Field); ok {
		return fmt.Errorf("--%s: %s", sf.Flag, e.Message)
	}
	return err
}

func keyCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: o2i key create|list|revoke ...\n")
		return errUsage
	}
	f := newAdminFlags("key "+args[0], cfg, stderr)
	switch args[0] {
	case "create":
		id := f.String("project", "", "project id (required)")
		scopes := f.String("scopes", "", "comma-separated scopes: orders:write,invoices:read")
		expires := f.String("expires", "never", "30d, 90d, 365d or never")
		name := f.String("name", "", "a name for the key")
		format := f.String("format", "current", "key format: current, or legacy-test / legacy-live for integrations that need the older prefixes")
		if err := f.parse(args[1:]); err != nil {
			return err
		}
		sc, err := apikey.ParseScopes(*scopes)
		if err != nil {
			return err
		}
		life, err := apikey.ParseExpiry(*expires)
		if err != nil {
			return err
		}
		prefix := map[string]string{"current": apikey.Prefix, "legacy-test": apikey.LegacyTest, "legacy-live": apikey.LegacyLive}[*format]
		if prefix == "" {
			return fmt.Errorf("--format must be current, legacy-test or legacy-live")
		}
		return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) { return apikey.Create(ctx, pool, *id, sc, life, *name, prefix) })
	case "list":
		id := f.String("project", "", "project id (required)")
		if err := f.parse(args[1:]); err != nil {
			return err
		}
		return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) { return apikey.List(ctx, pool, *id, time.Now()) })
	case "revoke":
		id := f.String("key-id", "", "key id (required)")
		if err := f.parse(args[1:]); err != nil {
			return err
		}
		return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) { return apikey.Revoke(ctx, pool, *id) })
	}
	fmt.Fprintf(stderr, "unknown key command %q\n", args[0])
	return errUsage
}

func requestsCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 || args[0] != "show" {
		fmt.Fprint(stderr, "usage: o2i requests show REQUEST_ID\n")
		return errUsage
	}
	f := newAdminFlags("requests show", cfg, stderr)
	id := args[1]
	if err := f.parse(args[2:]); err != nil {
		return err
	}
	return f.print(ctx, stdout, func(pool *pgxpool.Pool) (any, error) { return reqlog.Show(ctx, pool, id) })
}
