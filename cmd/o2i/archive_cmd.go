package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/o2i-service/o2i/query"
)

// progressBar returns a progress callback drawing a bar on w (nothing when quiet).
func progressBar(w io.Writer, quiet bool, what string) (func(done, total int), func()) {
	var bar *progressbar.ProgressBar
	update := func(done, total int) {
		if quiet {
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
				progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond))
		}
		_ = bar.Set(done)
	}
	finish := func() {
		if bar != nil {
			_ = bar.Finish()
			fmt.Fprintln(w)
		}
	}
	return update, finish
}

// archiveCmd is `o2i archive verify|export|backfill`: the auditor's checks
// and export, and anchoring of documents archived before the anchor existed.
func archiveCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: o2i archive verify|export|backfill ...\n")
		return errUsage
	}
	fs := flag.NewFlagSet("archive "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	projectID := fs.String("project", "", "project id")
	year := fs.Int("year", 0, "year of issue, YYYY")
	out := fs.String("out", "", "the ZIP file to write (export)")
	quiet := fs.Bool("quiet", false, "no progress bar")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		return errUsage
	}
	if *year != 0 && (*year < 2000 || *year > 9999) {
		return fmt.Errorf("--year: %d is not a year YYYY", *year)
	}
	switch args[0] {
	case "verify", "export":
		if *projectID == "" {
			return fmt.Errorf("--project is required")
		}
	case "backfill":
	default:
		fmt.Fprintf(stderr, "unknown archive command %q\n", args[0])
		return errUsage
	}
	if args[0] == "export" && (*year == 0 || *out == "") {
		return fmt.Errorf("--year and --out are required")
	}
	d, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.close()
	w := newWiring(d, nil)
	progress, finish := progressBar(stderr, *quiet, args[0])
	switch args[0] {
	case "verify":
		rep, err := w.queries.VerifyArchive(ctx, *projectID, *year, progress)
		finish()
		if err != nil {
			return err
		}
		if err := json.NewEncoder(stdout).Encode(rep); err != nil {
			return err
		}
		if len(rep.Problems) > 0 {
			return errReported
		}
		return nil
	case "export":
		return exportArchive(ctx, w.queries, *projectID, *year, *out, progress, finish, stdout)
	}
	res, err := w.invoices.BackfillArchive(ctx, w.archive, *projectID, progress)
	finish()
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}

// exportArchive writes the ZIP beside out and renames it into place when
// complete, so that out never holds an incomplete export.
func exportArchive(ctx context.Context, q *query.Service, projectID string, year int, out string, progress func(int, int), finish func(), stdout io.Writer) error {
	f, err := os.CreateTemp(filepath.Dir(out), ".export-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = q.ExportArchive(ctx, f, projectID, year, progress)
	finish()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	info, err := os.Stat(f.Name())
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"file": out, "bytes": info.Size(), "year": year, "projectId": projectID})
}

// resetTestData is `o2i project reset-test-data --project ID`.
func resetTestData(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("project reset-test-data", flag.ContinueOnError)
	fs.SetOutput(stderr)
	projectID := fs.String("project", "", "project id (required)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return errUsage
	}
	if *projectID == "" {
		return fmt.Errorf("--project is required")
	}
	d, err := connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer d.close()
	w := newWiring(d, nil)
	res, err := w.commands.ResetTestData(ctx, w.archive, d.redis, *projectID)
	if err != nil {
		return err
	}
	return printJSON(stdout, res)
}
