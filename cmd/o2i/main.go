// Command o2i is the Order-to-Invoice service: one binary whose `serve`
// command runs the roles (api, relay, projector, invoicer) and whose other
// commands migrate the database and administer projects, keys and requests.
// Admin commands print JSON on stdout.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/google/uuid"

	"github.com/o2i-service/o2i/internal/apperr"
	"github.com/o2i-service/o2i/internal/tracing"
)

const usage = `o2i — the Order-to-Invoice service

Usage:
  o2i serve [--roles api,relay,projector,invoicer]
  o2i migrate
  o2i openapi                                   print the OpenAPI 3.1 document
  o2i project create --name NAME [--test-mode=true|false] [--accounting accrual|cash]
  o2i project set --project ID [--test-mode=..] [--accounting ..] [--seller-* ..] [--contact-* ..] ...
  o2i project show --project ID
  o2i project reset-test-data --project ID      discard test orders, documents, tasks, read models; restart TEST numbers
  o2i key create --project ID --scopes orders:write,invoices:read [--expires 30d|90d|365d|never] [--name N]
  o2i key list --project ID
  o2i key revoke --key-id ID
  o2i requests show REQUEST_ID
  o2i product set --project ID --product-id ID (--period-months N | --immediate)
  o2i user invite --project ID --email X --role owner|developer|accountant|auditor [--audit-years Y,Y --ends-on YYYY-MM-DD]
  o2i tasks list --project ID [--status open|resolved] [--type T] [--order ORDERNO] [--limit N]
  o2i invoice preview --order ORDER.json [--project ID] [--out FILE] [--format zugferd|xrechnung]
  o2i invoice samples --out DIR                 one XML file per scenario of the engine's corpus
  o2i archive verify --project ID [--year YYYY] re-read and check every archived object and the hash chains
  o2i archive export --project ID --year YYYY --out FILE.zip   the tax-audit export (as GET /v1/archive/export)
  o2i archive backfill [--project ID]           anchor documents archived before the anchor; render missing PDFs
  o2i projection rebuild [--from-beginning]     repair Redis from PostgreSQL, or rebuild both read models from the events
  o2i export datev --project ID --from YYYY-MM-DD --to YYYY-MM-DD [--out FILE]   DATEV bookings (Windows-1252 CSV)
  o2i report oss --project ID --quarter YYYY-Qn [--out FILE]                     one-stop-shop return (CSV)
  o2i report ecsl --project ID --period YYYY-MM [--out FILE]                     EC sales list (CSV)

Every command reads its configuration from O2I_* environment variables;
admin commands also accept --database-url.
`

func main() {
	// Random UUIDs (request ids, order and event ids) from a pool that
	// reads crypto/rand 256 bytes at a time instead of once per id.
	// Enabled here, before any goroutine makes one (the switch itself is
	// not synchronised).
	uuid.EnableRandPool()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		if errors.Is(err, errReported) {
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "o2i:", err)
		if e := apperr.As(err); e != nil && e.Kind != apperr.Internal {
			os.Exit(1)
		}
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

// errReported means the command already printed its error (as JSON on stderr).
var errReported = errors.New("reported")

// run is the whole program; tests call it with their own arguments and environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return err
	}
	setupLogging(cfg.LogLevel, stderr)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	switch args[0] {
	case "serve":
		return serve(ctx, cfg, args[1:], stderr)
	case "migrate":
		return migrateCmd(ctx, cfg, args[1:], stdout)
	case "openapi":
		doc, err := openAPIDocument()
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(doc, '\n'))
		return err
	case "project":
		return projectCmd(ctx, cfg, args[1:], stdout, stderr)
	case "key":
		return keyCmd(ctx, cfg, args[1:], stdout, stderr)
	case "user":
		return userCmd(ctx, cfg, args[1:], stdout, stderr)
	case "requests":
		return requestsCmd(ctx, cfg, args[1:], stdout, stderr)
	case "product":
		return productCmd(ctx, cfg, args[1:], stdout, stderr)
	case "tasks":
		return tasksCmd(ctx, cfg, args[1:], stdout, stderr)
	case "projection":
		return projectionCmd(ctx, cfg, args[1:], stdout, stderr)
	case "invoice":
		return invoiceCmd(ctx, cfg, args[1:], stdout, stderr)
	case "export":
		return exportCmd(ctx, cfg, args[1:], stdout, stderr)
	case "report":
		return reportCmd(ctx, cfg, args[1:], stdout, stderr)
	case "archive":
		return archiveCmd(ctx, cfg, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
	return errUsage
}

func setupLogging(level string, w io.Writer) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	// A line logged with a context that carries a span gets trace_id and span_id.
	slog.SetDefault(slog.New(tracing.LogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))))
}
