package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/query"
)

// output opens the file to write (stdout for "" or "-").
func output(path string, stdout io.Writer) (io.Writer, func() error, error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, err
	}
	return f, f.Close, nil
}

// exportCmd is `o2i export datev --project ID --from YYYY-MM-DD --to
// YYYY-MM-DD [--out FILE]`: the DATEV bookings GET /v1/exports/datev serves,
// with a progress bar on stderr and a JSON summary on stdout when --out is
// given.
func exportCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "datev" {
		fmt.Fprint(stderr, "usage: o2i export datev --project ID --from YYYY-MM-DD --to YYYY-MM-DD [--out FILE]\n")
		return errUsage
	}
	f := newAdminFlags("export datev", cfg, stderr)
	id := f.String("project", "", "project id (required)")
	fromS := f.String("from", "", "first booking date YYYY-MM-DD (required)")
	toS := f.String("to", "", "last booking date YYYY-MM-DD, same year as --from (required)")
	out := f.String("out", "", "file to write (Windows-1252 CSV); default stdout")
	quiet := f.Bool("quiet", false, "no progress bar")
	if err := f.parse(args[1:]); err != nil {
		return err
	}
	if *id == "" || *fromS == "" || *toS == "" {
		fmt.Fprint(stderr, "--project, --from and --to are required\n")
		return errUsage
	}
	from, to, err := query.ParseExportRange(*fromS, *toS)
	if err != nil {
		return err
	}
	pool, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	progress, finish := progressBar(stderr, *quiet, "booking documents")
	defer finish()
	return streamOut(*out, stdout, func(w io.Writer) error {
		return query.New(pool, nil).DATEVExport(ctx, w, *id, from, to, time.Now(), progress)
	})
}

// streamOut writes what write writes to the file path (then prints
// {"out","bytes"}) or to stdout. A file is written beside path and renamed
// into place when complete: a failed export leaves no part of a file.
func streamOut(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		bw := bufio.NewWriterSize(stdout, 64<<10)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // a no-op once renamed
	cw := &countBytes{w: f}
	bw := bufio.NewWriterSize(cw, 64<<10)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return err
	}
	return printJSON(stdout, map[string]any{"out": path, "bytes": cw.n})
}

type countBytes struct {
	w io.Writer
	n int64
}

func (c *countBytes) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func writeOut(path string, body []byte, stdout io.Writer) error {
	w, closeFn, err := output(path, stdout)
	if err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		_ = closeFn()
		return err
	}
	if err := closeFn(); err != nil {
		return err
	}
	if path != "" && path != "-" {
		return printJSON(stdout, map[string]any{"out": path, "bytes": len(body)})
	}
	return nil
}

// reportCmd is `o2i report oss --project ID --quarter YYYY-Qn [--out FILE]`
// and `o2i report ecsl --project ID --period YYYY-MM [--out FILE]`.
func reportCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	usage := "usage: o2i report oss --project ID --quarter YYYY-Qn [--out FILE] | o2i report ecsl --project ID --period YYYY-MM [--out FILE]\n"
	if len(args) == 0 || (args[0] != "oss" && args[0] != "ecsl") {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	kind := args[0]
	f := newAdminFlags("report "+kind, cfg, stderr)
	id := f.String("project", "", "project id (required)")
	quarter := f.String("quarter", "", "oss: the quarter YYYY-Qn")
	period := f.String("period", "", "ecsl: the month YYYY-MM (or quarter YYYY-Qn)")
	out := f.String("out", "", "file to write (CSV); default stdout")
	quiet := f.Bool("quiet", false, "no progress note on stderr")
	if err := f.parse(args[1:]); err != nil {
		return err
	}
	if *id == "" || (kind == "oss" && *quarter == "") || (kind == "ecsl" && *period == "") {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	var p accounting.Period
	var err error
	if kind == "oss" {
		p, err = accounting.ParseQuarter(*quarter)
	} else {
		p, err = accounting.ParsePeriod(*period)
	}
	if err != nil {
		return err
	}
	pool, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	progress, finish := progressBar(stderr, *quiet, "summing "+kind+" "+p.Label)
	progress(0, -1) // a spinner: the report has no steps to count
	svc := query.New(pool, nil)
	var body []byte
	if kind == "oss" {
		body, err = svc.OSSReport(ctx, *id, p)
	} else {
		body, err = svc.ECSLReport(ctx, *id, p)
	}
	finish()
	if err != nil {
		return err
	}
	return writeOut(*out, body, stdout)
}
