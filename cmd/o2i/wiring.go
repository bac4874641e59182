package main

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/command"
	"github.com/o2i-service/o2i/command/invoicing"
	"github.com/o2i-service/o2i/internal/banktransfer"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/mail"
	"github.com/o2i-service/o2i/projection"
	"github.com/o2i-service/o2i/query"
)

// wiring builds the command and query sides and the background roles from
// the dependencies. With a zero deps it still yields the route table, for the
// OpenAPI document.
type wiring struct {
	d        *deps
	reg      prometheus.Registerer
	commands *command.Service
	invoices *invoicing.Service // the invoicer role's use cases
	queries  *query.Service
	archive  *archive.Archive
}

func newWiring(d *deps, reg prometheus.Registerer) *wiring {
	w := &wiring{
		d:        d,
		reg:      reg,
		commands: command.New(d.pool),
		invoices: invoicing.New(d.pool),
		queries:  query.New(d.pool, d.redis),
	}
	if reg != nil {
		_ = w.commands.RegisterMetrics(reg) // only fails on a second registration
		_ = w.queries.RegisterMetrics(reg)
	}
	if d.s3 != nil {
		w.archive = archive.New(d.s3, d.cfg.S3Bucket).WithTest(archive.NewTest(d.s3, d.cfg.S3TestBucket))
		w.queries.ServeDocumentsFrom(w.archive)
	}
	return w
}

// apiRoutes are the versioned endpoints of both sides.
func (w *wiring) apiRoutes() []httpx.Route {
	return append(w.commands.Routes(), w.queries.Routes()...)
}

// routes is the whole table the router mounts: system and API endpoints.
func (w *wiring) routes(h *health) []httpx.Route {
	var all []httpx.Route
	var once sync.Once
	get := func() []httpx.Route { return all }
	reg, _ := w.reg.(*prometheus.Registry)
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	once.Do(func() {
		all = append(systemRoutes(h, reg, get), w.apiRoutes()...)
	})
	return all
}

// worker returns the loop of a background role, or nil when the role has no work yet.
func (w *wiring) worker(role string) func(context.Context) error {
	switch role {
	case "relay":
		return command.NewRelay(w.d.pool, w.d.cfg.KafkaBrokers, w.reg).Run
	case "invoicer":
		iv := invoicing.NewInvoicer(w.invoices, w.archive, w.d.cfg.KafkaBrokers)
		iv.Workers = w.d.cfg.InvoicerWorkers
		if w.reg != nil {
			_ = iv.RegisterMetrics(w.reg) // only fails on a second registration
		}
		if sender, err := mail.NewSender(w.d.cfg.SMTPURL, w.d.cfg.MailFrom); err == nil { // checked by loadConfig
			iv.Mail = invoicing.NewMailer(w.invoices, w.archive, sender)
			iv.Mail.Concurrency = w.d.cfg.MailConcurrency
		}
		iv.Transfers = banktransfer.New(w.d.cfg.StripeAPIBase, w.d.cfg.ProviderTimeout)
		w.invoices.SetArchiveTimeout(w.d.cfg.ArchiveTimeout)
		return iv.Run
	case "projector":
		return projection.New(w.d.pool, w.d.redis, w.d.cfg.KafkaBrokers, w.reg).Run
	}
	return nil
}

// openAPIDocument renders the document from the route table without connecting anywhere.
func openAPIDocument() ([]byte, error) {
	w := newWiring(&deps{}, nil)
	return httpx.OpenAPI(w.routes(&health{}))
}
