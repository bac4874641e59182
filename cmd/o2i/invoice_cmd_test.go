package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/o2i-service/o2i/internal/einvoice"
	"github.com/o2i-service/o2i/internal/testenv"
)

func TestInvoicePreviewAndSamplesPassTheOfficialRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	order := filepath.Join(dir, "order.json")
	if err := os.WriteFile(order, []byte(`{"orderNo":"P-1","billingAddress":{"country_code":"DE","name":"Amt","street":"Weg 1","postal_code":"10115","city":"Berlin","leitweg_id":"991-33333TEST-33"},
		"items":[{"name":"Beratung","quantity":3,"unitNetCents":12000,"taxRate":19}],"service_period":{"start_date":"2026-11-01","end_date":"2026-11-30"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "invoice", "preview", "--order", order, "--out", filepath.Join(dir, "preview.xml"), "--format", "xrechnung"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, "invoice", "preview", "--order", order, "--format", "zugferd"); err == nil {
		t.Error("--format zugferd accepted for an order with a Leitweg-ID")
	}
	// With a project: its seller data.
	pool := testenv.Pool(t)
	pid := testenv.Project(t, pool, true)
	out, err := runCmd(t, "invoice", "preview", "--order", order, "--project", pid)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Muster Handel GmbH") || !strings.Contains(out, "PREVIEW-") {
		t.Errorf("preview with --project lacks the project's seller or the preview number:\n%.500s", out)
	}
	samplesDir := filepath.Join(dir, "samples")
	out, err = runCmd(t, "invoice", "samples", "--out", samplesDir)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct{ Files []string }
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed.Files) < 15 {
		t.Fatalf("samples: %v %s", err, out)
	}
	if _, err := runCmd(t, "invoice", "preview", "--order", order, "--out", filepath.Join(dir, "preview.pdf")); err != nil {
		t.Fatal(err)
	}
	files := append(listed.Files, filepath.Join(dir, "preview.xml"), filepath.Join(dir, "preview.pdf"))
	var pdfs int
	for _, f := range files {
		if filepath.Ext(f) == ".pdf" {
			pdfs++
			continue // judged by the referee below
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if fs := einvoice.CheckXML(raw); !einvoice.Valid(fs) {
			t.Errorf("%s: %v", f, fs)
		}
	}
	judgeFiles(t, files...)
	if pdfs != len(files)/2 {
		t.Errorf("%d PDFs among %d files, want one per XML", pdfs, len(files))
	}
}

func TestInvoicePreviewReportsInvalidOrdersAsJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	order := filepath.Join(dir, "order.json")
	if err := os.WriteFile(order, []byte(`{"orderNo":"P-2","billingAddress":{"country_code":"DE","name":"Max","street":"Weg 1","postal_code":"10115","city":"Berlin"},"items":[{"name":"Tee","quantity":1,"unitNetCents":1000,"taxRate":16}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"invoice", "preview", "--order", order}, testenv.Getenv, &stdout, &stderr)
	if err == nil {
		t.Fatal("preview accepted a 16 % rate for a German buyer")
	}
	var body struct {
		Error struct{ Code, Field string }
	}
	if jerr := json.Unmarshal(stderr.Bytes(), &body); jerr != nil || body.Error.Code != "validation_failed" || body.Error.Field != "items[0].taxRate" {
		t.Errorf("stderr %s (%v), want validation_failed on items[0].taxRate", stderr.String(), jerr)
	}
}
