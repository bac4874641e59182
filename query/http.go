// Package query is the read side: order status, invoice lookup and listing,
// served from the read models (Redis first, PostgreSQL fallback), review
// tasks (PostgreSQL), the auditor's archive listing, verification and
// export (archive.go), and the read endpoints. It imports internal packages
// and archive (documents, read by the version recorded in PostgreSQL), never
// command or render: the read side never renders or writes a document.
package query

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/o2i-service/o2i/archive"
	"github.com/o2i-service/o2i/internal/httpx"
	"github.com/o2i-service/o2i/internal/readmodel"
)

// Service holds what the read use cases need.
type Service struct {
	pool    *pgxpool.Pool
	redis   *redis.Client // nil: PostgreSQL only
	cursors *cursorKey
	near    *nearCache
	archive *archive.Archive // nil: documents are not served

	openTasks *prometheus.GaugeVec // nil: not counted (RegisterMetrics)
}

// ServeDocumentsFrom makes the PDF and XML endpoints read archived documents from a.
func (s *Service) ServeDocumentsFrom(a *archive.Archive) { s.archive = a }

// New returns the read side. Its in-process cache of order status records
// works only while Run follows the projectors' change announcements.
func New(pool *pgxpool.Pool, rdb *redis.Client) *Service {
	return &Service{pool: pool, redis: rdb, cursors: &cursorKey{pool: pool}, near: newNearCache()}
}

// Run follows the projectors' change announcements (keeping the in-process
// cache of order status records correct) and, after RegisterMetrics,
// counts the open review tasks, until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if s.openTasks != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.countOpenTasks(ctx) }()
	}
	if s.redis != nil {
		s.near.follow(ctx, s.redis)
	}
	wg.Wait()
	return nil
}

// Routes are the read endpoints.
func (s *Service) Routes() []httpx.Route {
	// The versioned reads (writeTagged) and the downloads say so in headers.
	versioned := []httpx.Header{httpx.ETagHeader, httpx.CacheControlHeader}
	download := []httpx.Header{httpx.ContentDispositionHeader}
	notArchivedYet := map[int][]httpx.Header{http.StatusConflict: {{
		Name: "Retry-After", Schema: httpx.RetryAfterHeader.Schema,
		Description: "Seconds to wait before fetching again, on document_not_archived of a document that is not archived yet or failed (and is retried by the service).",
	}}}
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/v1/orders/{orderNo}", Scope: httpx.ScopeInvoicesRead, Tag: "orders",
			OperationID: "getOrderStatus", Summary: "Order status with every invoice document of the order",
			Description: "Served from Redis, falling back to PostgreSQL. Carries an ETag (a hash of this order's record: it changes exactly when the record does); " +
				"If-None-Match with that ETag is answered 304 without a body, so polling costs almost nothing while nothing changes.",
			Input: OrderStatusInput{},
			Responses: []httpx.Response{
				{Status: 200, Body: httpx.Envelope[readmodel.OrderStatus]{}, Headers: versioned},
				{Status: 304, Description: "unchanged since the ETag sent in If-None-Match", Headers: versioned},
			},
			Errors: []int{404}, Handler: s.getOrder,
		},
		{
			Method: http.MethodGet, Path: "/v1/invoices", Scope: httpx.ScopeInvoicesRead, Tag: "invoices",
			OperationID: "listInvoices", Summary: "List invoices, cursor-paginated, filtered by status, number, orderNo or paymentRef",
			Description: "Keyset pagination in the order invoices were recorded, oldest first: walking all pages returns each " +
				"invoice exactly once even while new ones arrive. nextCursor is always set: on the last page (hasMore false) it " +
				"points after the last invoice, so passing it later returns only invoices recorded since. A cursor is bound to " +
				"the project and the filters it was issued with; an altered or foreign cursor is 422 with field cursor.",
			Input:     ListInvoicesInput{},
			Responses: []httpx.Response{{Status: 200, Body: InvoicePage{}}},
			Errors:    []int{422}, Handler: s.listInvoices,
		},
		{
			Method: http.MethodGet, Path: "/v1/invoices/{reference}", Scope: httpx.ScopeInvoicesRead, Tag: "invoices",
			OperationID: "getInvoice", Summary: "Invoice metadata by UUID, number, order number (newest document) or payment reference",
			Description: "reference is tried as invoice UUID, invoice number, order number (the order's newest document) and " +
				"payment reference, in that order. Carries an ETag; If-None-Match with it is answered 304.",
			Input: InvoiceInput{},
			Responses: []httpx.Response{
				{Status: 200, Body: httpx.Envelope[Invoice]{}, Headers: versioned},
				{Status: 304, Description: "unchanged since the ETag sent in If-None-Match", Headers: versioned},
			},
			Errors: []int{404}, Handler: s.getInvoice,
		},
		{
			Method: http.MethodGet, Path: "/v1/invoices/{reference}/pdf", Scope: httpx.ScopeInvoicesRead, Tag: "invoices",
			OperationID: "getInvoicePDF", Summary: "The archived PDF (ZUGFeRD PDF/A-3, or the XRechnung reading copy)",
			Description: "409 document_not_archived while the invoice is not archived yet or is failed (both retry later; a failed one is retried by the service), or when it failed validation (recorded so by earlier versions).",
			Input:       DocumentInput{},
			Responses:   []httpx.Response{{Status: 200, Body: []byte{}, ContentType: "application/pdf", Headers: download}},
			Errors:      []int{404, 409, 501}, ErrorHeaders: notArchivedYet, Handler: s.getDocument,
		},
		{
			Method: http.MethodGet, Path: "/v1/invoices/{reference}/xml", Scope: httpx.ScopeInvoicesRead, Tag: "invoices",
			OperationID: "getInvoiceXML", Summary: "The archived EN 16931 XML; 409 when not archived yet or not applicable",
			Description: "409 document_not_archived while the invoice is not archived yet or is failed (both retry later; a failed one is retried by the service), or when it failed validation (recorded so by earlier versions).",
			Input:       DocumentInput{},
			Responses:   []httpx.Response{{Status: 200, Body: "", ContentType: "application/xml", Headers: download}},
			Errors:      []int{404, 409, 501}, ErrorHeaders: notArchivedYet, Handler: s.getDocument,
		},
		{
			Method: http.MethodGet, Path: "/v1/archive", Scope: httpx.ScopeArchiveRead, Tag: "archive",
			OperationID: "listArchive", Summary: "The archived invoices of a year with their objects and hash chain, cursor-paginated",
			Description: "For auditors (keys with scope archive:read). Each entry is an archived live invoice of the year of issue: " +
				"its number, issue date and type, and its objects (xml, pdf, manifest) with SHA-256, size, version id and " +
				"retain-until as recorded in the database when they were archived. Per invoice a manifest lists its documents " +
				"and the SHA-256 of the previous manifest of the same number range (previousManifestSha256; null for the first), " +
				"the chain positions following the invoice numbers (chainSeq), so each number range is a hash chain that shows " +
				"any gap, removal, change or document out of number order. Test documents have no tax effect " +
				"and are not listed. Keyset pagination in archiving order, like GET /v1/invoices; while documents of the year are " +
				"still being archived, one may appear behind a cursor already passed, so a complete walk is one over a year whose " +
				"documents are all archived (or a second walk). A cursor is bound to the project " +
				"and the year (an altered or foreign cursor is 422 with field cursor). A missing or malformed year is 422 with field year.",
			Input:     ListArchiveInput{},
			Responses: []httpx.Response{{Status: 200, Body: ArchivePage{}}},
			Errors:    []int{422}, Handler: s.listArchive,
		},
		{
			Method: http.MethodGet, Path: "/v1/archive/export", Scope: httpx.ScopeArchiveRead, Tag: "archive",
			OperationID: "exportArchive", Summary: "The tax-audit export of a year: a streamed ZIP of documents, manifests and indexes",
			Description: "For auditors (keys with scope archive:read). A ZIP, streamed: documents/<number>.xml and .pdf, " +
				"manifests/<number>.json, index.csv (one row per file: number, issue date, type, number range, chain position, " +
				"kind, file, SHA-256, size, version id, retain-until, manifest hash, previous manifest hash; semicolons, CRLF, " +
				"UTF-8) and index.xml, which describes index.csv in the description standard for data handed over in German tax " +
				"audits (GDPdU, DTD gdpdu-01-09-2004.dtd), and console-changes.jsonl, the console's change log of the year (one JSON object per line). Every object is read by its recorded version and checked against its " +
				"recorded SHA-256 and size; an object that does not match cuts the response (the ZIP is then incomplete and " +
				"unreadable), and `o2i archive verify` names it. Test documents are not part of it. A missing or malformed year is 422 with field year.",
			Input:     ExportArchiveInput{},
			Responses: []httpx.Response{{Status: 200, Body: []byte{}, ContentType: "application/zip", Headers: download}},
			Errors:    []int{422, 501}, Handler: s.exportArchive,
			Timeout: archiveExportTimeout,
		},
		{
			Method: http.MethodGet, Path: "/v1/tasks", Scope: httpx.ScopeInvoicesRead, Tag: "tasks",
			OperationID: "listTasks", Summary: "List review tasks, cursor-paginated, filtered by status, type or orderNo",
			Description: "Review tasks are what a person has to look at; the service opens them and resolves some itself. " +
				"A hold holds orders back without an invoice number. A cause of the project (seller_data_incomplete, xrechnung_contact_phone_missing, " +
				"provider_rights_missing) is ONE task per project and cause, a product without revenue recognition one per product, whatever the " +
				"number of orders: heldOrders says how many it holds now and heldOrderSample names up to 10 of them; each held order's holds[] " +
				"(GET /v1/orders/{orderNo}) names the task, and the orderNo filter finds it. One urgent notice is mailed per task. Fixing the cause " +
				"(o2i project set, PUT /v1/products/{productId}, or POST /v1/tasks/{id}/recheck) releases the held orders, invoiced within seconds; " +
				"the task is resolved when it holds none any more. A cause of the order itself stays one task per order.\n\n" +
				"Known types (details keys in brackets; orderNo whenever the task concerns one order):\n\n" +
				"- seller_data_incomplete: the project's seller data lacks what an invoice needs (name; VAT ID or tax number; for XRechnung also city, postal code, contact name and e-mail); its due orders wait, urgent [cause, missing, details]\n" +
				"- xrechnung_contact_phone_missing: orders with a Leitweg-ID wait, XRechnung needs a telephone number on the invoice contact (BR-DE-6) [cause, missing, details]\n" +
				"- provider_rights_missing: the payment provider refused the project's key (no rights to write customers or payment intents, or no key); its provider_transfer orders wait, urgent [cause, details]\n" +
				"- product_without_revenue_recognition: accrual accounting, services without service_period whose product has no revenue recognition; one task per product, its orders wait [cause, productId, catalogProductId, details]\n" +
				"- order_not_invoiceable: the invoice engine rejects the order, for example a tax rate not allowed at the place of supply; the order waits [orderNo, details]\n" +
				"- invoice_validation_failed: a document would break EN 16931 / XRechnung rules; the order waits without a number until the cause is fixed (a change of the project's settings, or a recheck, evaluates it again) [orderNo, document, rules, findings]\n" +
				"- payment_amount_mismatch: the provider's payment is not the amount due; the invoice is issued anyway [orderNo, paidCents, dueCents]\n" +
				"- vat_id_review: the buyer's VAT ID decides a supply abroad and needs confirming (for example it is not of the buyer's country); the invoice is issued as determined [orderNo, number, treatment, vatId, country, shippingCountry, details]\n" +
				"- payment_without_order: a provider payment whose paymentRef matches no order; resolved when the order arrives [paymentRef, eventId, amountCents, currency]\n" +
				"- credit_balance_mismatch: a reported store-credit balance differs from the transaction history [email, reportedCents, computedCents]\n" +
				"- invoicing_failed: the invoicer could not issue or archive the order's invoices; retried with a growing delay and resolved when a retry succeeds. A document whose rendering or archiving failed is failed meanwhile and names this task (failureTaskId) [orderNo, error, attempts]\n\n" +
				"Other types may be added; the type filter accepts any type. Keyset pagination by creation time, oldest first: " +
				"walking all pages returns each task exactly once. nextCursor is always set: on the last page (hasMore false) it " +
				"points after the last task, so passing it later continues with tasks recorded since. A cursor is bound to the " +
				"project and the filters it was issued with; an altered or foreign cursor is 422 with field cursor.",
			Input:     ListTasksInput{},
			Responses: []httpx.Response{{Status: 200, Body: TaskPage{}}},
			Errors:    []int{422}, Handler: s.listTasks,
		},
		{
			Method: http.MethodGet, Path: "/v1/products", Scope: httpx.ScopeOrdersWrite, Tag: "orders",
			OperationID: "listProducts", Summary: "List the catalogue's products with their ids and revenue recognition, cursor-paginated",
			Description: productsDescription,
			Input:       ListProductsInput{},
			Responses:   []httpx.Response{{Status: 200, Body: ProductPage{}}},
			Errors:      []int{422}, Handler: s.listProducts,
		},
		{
			Method: http.MethodGet, Path: "/v1/tasks/{id}", Scope: httpx.ScopeInvoicesRead, Tag: "tasks",
			OperationID: "getTask", Summary: "One review task by its id",
			Description: "404 task_not_found for an unknown id, a task of another project, or an id that is not a UUID. " +
				"See GET /v1/tasks for the task types.",
			Input:     TaskInput{},
			Responses: []httpx.Response{{Status: 200, Body: httpx.Envelope[Task]{}}},
			Errors:    []int{404}, Handler: s.getTask,
		},
		{
			Method: http.MethodGet, Path: "/v1/exports/datev", Scope: httpx.ScopeInvoicesRead, Tag: "accounting",
			OperationID: "exportDATEV", Summary: "DATEV bookings (Buchungsstapel, EXTF 700) of a date range, Windows-1252 CSV",
			Description: "The bookings dated from..to (one financial year) of the project's live documents and provider payments: " +
				"revenue per VAT rate and treatment on the chart's automatic accounts (SKR03 or SKR04, per project, overridable), " +
				"the customer's debtor (one collective debtor or one per customer), payments and redeemed store credit as payments, " +
				"gift cards as liabilities, cancellations and credit notes reversed, and deferred revenue for service periods after " +
				"the issue month, released on the first day of each month. Test documents never appear. 422 with field from or to " +
				"for a bad range; 409 export_failed when a document cannot be booked. The file is streamed as it is read: a document that " +
				"cannot be booked found after the body has begun cuts the response off instead (it never ends cleanly).",
			Input:     DATEVExportInput{},
			Responses: []httpx.Response{{Status: 200, Body: "", ContentType: "text/csv", Headers: download}},
			Errors:    []int{409, 422}, Handler: s.exportDATEV,
			Timeout: ExportTimeout + 10*time.Second,
		},
		{
			Method: http.MethodGet, Path: "/v1/reports/oss", Scope: httpx.ScopeInvoicesRead, Tag: "accounting",
			OperationID: "reportOSS", Summary: "One-stop-shop return of a quarter: per member state and rate, net and VAT, as CSV",
			Description: "The B2C distance sales taxed in the member state of consumption that were issued in the quarter, cancellations " +
				"and credit notes subtracted, in the CSV layout of the tax office's upload. Test documents never appear.",
			Input:     OSSReportInput{},
			Responses: []httpx.Response{{Status: 200, Body: "", ContentType: "text/csv", Headers: download}},
			Errors:    []int{422}, Handler: s.reportOSS,
			Timeout: ExportTimeout + 10*time.Second,
		},
		{
			Method: http.MethodGet, Path: "/v1/reports/ecsl", Scope: httpx.ScopeInvoicesRead, Tag: "accounting",
			OperationID: "reportECSL", Summary: "EC sales list of a month or quarter: per customer VAT ID the goods (L) and services (S), as CSV",
			Description: "The intra-community supplies of goods and the services under reverse charge issued in the period, per " +
				"customer VAT ID and kind, cancellations and credit notes subtracted, in whole euros, in the CSV layout of the tax " +
				"office's upload. Test documents never appear.",
			Input:     ECSLReportInput{},
			Responses: []httpx.Response{{Status: 200, Body: "", ContentType: "text/csv", Headers: download}},
			Errors:    []int{422}, Handler: s.reportECSL,
			Timeout: ExportTimeout + 10*time.Second,
		},
		{
			Method: http.MethodGet, Path: "/v1/requests/{requestId}", Scope: httpx.ScopeAnyKey, Tag: "system",
			OperationID: "getRequest", Summary: "A recorded request of the key's project (kept 30 days)",
			Description: "Method, path, status, duration, key prefix, Idempotency-Key and time of a request, by its X-Request-Id. " +
				"Requests are recorded in batches a few milliseconds after they were answered. 404 request_not_found for an " +
				"unknown id, one older than 30 days, or a request of another project.",
			Input:     RequestInput{},
			Responses: []httpx.Response{{Status: 200, Body: httpx.Envelope[RequestRecord]{}}},
			Errors:    []int{404}, Handler: s.getRequest,
		},
	}
}
