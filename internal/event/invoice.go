package event

import "time"

// Event types of the invoice aggregate (topic o2i.invoices, keyed by project
// and orderNo like the order's events). Each carries the full Invoice after
// the change as its data.
const (
	InvoiceCreated  = "invoice.created"  // a document was issued: number assigned, XML computed
	InvoiceArchived = "invoice.archived" // the document is stored write-once; PDF and XML can be fetched
	InvoiceFailed   = "invoice.failed"   // rendering or archiving failed after the invoicer's attempts: retried, failureReason and taskId say why and where
)

// Invoice is the full metadata of one document after a change.
type Invoice struct {
	ID              string     `json:"id"` // UUID of the document
	ProjectID       string     `json:"projectId"`
	OrderID         string     `json:"orderId"`
	OrderNo         string     `json:"orderNo"`
	PaymentRef      string     `json:"paymentRef,omitempty"`
	Number          string     `json:"number"`
	Status          string     `json:"status"`  // created, archived, failed
	Version         int64      `json:"version"` // 1 when created, +1 per change
	Type            string     `json:"type"`    // invoice, cancellation
	Format          string     `json:"format"`  // zugferd, xrechnung
	IssueDate       string     `json:"issueDate"`
	Currency        string     `json:"currency"`
	TotalNetCents   int64      `json:"totalNetCents"`
	TotalTaxCents   int64      `json:"totalTaxCents"`
	TotalGrossCents int64      `json:"totalGrossCents"`
	TestMode        bool       `json:"testMode"`
	CreatedAt       time.Time  `json:"createdAt"`
	ArchivedAt      *time.Time `json:"archivedAt,omitempty"`
	FailedRules     []string   `json:"failedRules,omitempty"`   // rule ids of a document that broke them (recorded so by earlier versions only)
	FailureReason   string     `json:"failureReason,omitempty"` // why rendering or archiving failed, when status is failed
	TaskID          string     `json:"taskId,omitempty"`        // UUID of the invoicing_failed review task, when status is failed
	Cancels         string     `json:"cancels,omitempty"`       // UUID of the invoice a cancellation cancels
}
