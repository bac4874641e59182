package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/billing"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/project"
	"github.com/o2i-service/o2i/internal/store"
	"github.com/o2i-service/o2i/render"
)

// invoiceCmd is `o2i invoice preview|samples`: the invoice engine without
// the pipeline, so that anyone can check what it produces.
func invoiceCmd(ctx context.Context, cfg Config, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, "usage: o2i invoice preview --order ORDER.json [--project ID] [--out FILE.xml|FILE.pdf] [--format zugferd|xrechnung]\n       o2i invoice samples --out DIR (XML and PDF of every scenario)\n")
		return errUsage
	}
	fs := flag.NewFlagSet("invoice "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch args[0] {
	case "preview":
		orderFile := fs.String("order", "", "order body as POST /v1/orders receives it (- for stdin)")
		projectID := fs.String("project", "", "project whose seller data to use (default: built-in demo seller)")
		dbURL := fs.String("database-url", cfg.DatabaseURL, "PostgreSQL URL, with --project")
		out := fs.String("out", "", "file for the XML (default stdout); further documents of the order get -2, -3 ... before the extension")
		format := fs.String("format", "", "zugferd or xrechnung: fail unless the order yields this format (it is derived from the order)")
		if err := fs.Parse(args[1:]); err != nil || *orderFile == "" {
			fmt.Fprintln(stderr, "--order is required")
			return errUsage
		}
		body, err := readInput(*orderFile)
		if err != nil {
			return err
		}
		seller := billing.ExampleSeller()
		if *projectID != "" {
			pool, err := store.Open(ctx, *dbURL, 2)
			if err != nil {
				return err
			}
			p, err := project.Get(ctx, pool, *projectID)
			pool.Close()
			if err != nil {
				return err
			}
			seller = p.Seller()
		}
		docs, err := command.Preview(body, seller, time.Now())
		if err != nil {
			if e := apperr.As(err); e != nil {
				_ = printJSON(stderr, map[string]any{"error": httpx.ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field}})
				return errReported
			}
			return err
		}
		if *format != "" && string(docs[0].Invoice.Format) != *format {
			return fmt.Errorf("the order yields %s, not %s (XRechnung exactly when the buyer has a valid leitweg_id)", docs[0].Invoice.Format, *format)
		}
		return writeDocuments(docs, *out, stdout, stderr)
	case "samples":
		dir := fs.String("out", "", "directory for the XML and the PDF of every scenario (required)")
		if err := fs.Parse(args[1:]); err != nil || *dir == "" {
			fmt.Fprintln(stderr, "--out is required")
			return errUsage
		}
		samples, err := render.Samples()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return err
		}
		var files []string
		for _, s := range samples {
			for i, name := range s.FileNames() {
				path := filepath.Join(*dir, name)
				pdf, err := render.PDF(s.Documents[i].XML)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				pdfPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".pdf"
				if err := os.WriteFile(path, s.Documents[i].XML, 0o644); err != nil {
					return err
				}
				if err := os.WriteFile(pdfPath, pdf, 0o644); err != nil {
					return err
				}
				files = append(files, path, pdfPath)
			}
		}
		return printJSON(stdout, map[string]any{"files": files})
	}
	fmt.Fprintf(stderr, "unknown invoice command %q\n", args[0])
	return errUsage
}

func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}

func writeDocuments(docs []render.Document, out string, stdout, stderr io.Writer) error {
	if out == "" {
		if len(docs) > 1 {
			fmt.Fprintf(stderr, "the order yields %d documents; printing the first (use --out to write all)\n", len(docs))
		}
		_, err := stdout.Write(docs[0].XML)
		return err
	}
	ext := filepath.Ext(out)
	for i, d := range docs {
		path := out
		if i > 0 {
			path = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(out, ext), i+1, ext)
		}
		doc := d.XML
		if strings.EqualFold(ext, ".pdf") {
			pdf, err := render.PDF(d.XML)
			if err != nil {
				return err
			}
			doc = pdf
		}
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stderr, "wrote", path, d.Invoice.Format, d.Invoice.TypeCode)
	}
	return nil
}
