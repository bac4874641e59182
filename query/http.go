// Package query is the read side: order status, invoice lookup and listing,
// served from the read models (Redis first, PostgreSQL fallback), and the
// read endpoints. It imports internal packages, archive and render (documents),
// never command.
package query

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
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
}

// ServeDocumentsFrom makes the PDF and XML endpoints read archived documents from a.
func (s *Service) ServeDocumentsFrom(a *archive.Archive) { s.archive = a }

// New returns the read side. Its in-process cache of order status records
// works only while Run follows the projectors' change announcements.
func New(pool *pgxpool.Pool, rdb *redis.Client) *Service {
	return &Service{pool: pool, redis: rdb, cursors: &cursorKey{pool: pool}, near: newNearCache()}
}

// Run follows the projectors' change announcements (keeping the in-process
// cache of order status records correct) until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	if s.redis != nil {
		s.near.follow(ctx, s.redis)
	}
	return nil
}

// Routes are the read endpoints.
func (s *Service) Routes() []httpx.Route {
	return []httpx.Route{
		{
			Method: http.MethodGet, Path: "/v1/orders/{orderNo}", Scope: httpx.ScopeInvoicesRead, Tag: "orders",
			OperationID: "getOrderStatus", Summary: "Order status with every invoice document of the order",
			Description: "Served from Redis, falling back to PostgreSQL. Carries an ETag (the read model's revision); " +
				"If-None-Match with that ETag is answered 304 without a body, so polling costs almost nothing while nothing changes.",
			Input: OrderStatusInput{},
			Responses: []httpx.Response{
				{Status: 200, Body: httpx.Envelope[readmodel.OrderStatus]{}},
				{Status: 304, Description: "unchanged since the ETag sent in If-None-Match"},
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
				{Status: 200, Body: httpx.Envelope[Invoice]{}},
				{Status: 304, Description: "unchanged since the ETag sent in If-None-Match"},
			},
			Errors: []int{404}, Handler: s.getInvoice,
		},
		{
			Method: http.MethodGet, Path: "/v1/invoices/{reference}/pdf", Scope: httpx.ScopeInvoicesRead, Tag: "invoices",
			OperationID: "getInvoicePDF", Summary: "The archived PDF (ZUGFeRD PDF/A-3, or the XRechnung reading copy)",
			Description: "409 document_not_archived while the invoice is not archived yet (retry later) or when it failed validation.",
			Input:       DocumentInput{},
			Responses:   []httpx.Response{{Status: 200, Body: []byte{}, ContentType: "application/pdf"}},
			Errors:      []int{404, 409, 501}, Handler: s.getDocument,
		},
		{
			Method: http.MethodGet, Path: "/v1/invoices/{reference}/xml", Scope: httpx.ScopeInvoicesRead, Tag: "invoices",
			OperationID: "getInvoiceXML", Summary: "The archived EN 16931 XML; 409 when not archived yet or not applicable",
			Description: "409 document_not_archived while the invoice is not archived yet (retry later) or when it failed validation.",
			Input:       DocumentInput{},
			Responses:   []httpx.Response{{Status: 200, Body: "", ContentType: "application/xml"}},
			Errors:      []int{404, 409, 501}, Handler: s.getDocument,
		},
	}
}
