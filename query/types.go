package query

import (
	"encoding/json"

	"github.com/swaggest/jsonschema-go"
)

// The response bodies of the read endpoints, as the OpenAPI document describes them.

// OrderStatusInput addresses one order.
type OrderStatusInput struct {
	OrderNo     string `path:"orderNo" required:"true"`
	IfNoneMatch string `header:"If-None-Match" description:"the ETag of a previous answer; 304 when unchanged"`
}

// Invoice is the invoice metadata record.
type Invoice struct {
	ID              string  `json:"id" required:"true" format:"uuid"`
	Number          string  `json:"number" required:"true"`
	Status          string  `json:"status" required:"true" enum:"created,archived,failed" description:"created (issued: number taken, XML computed, being archived), archived (PDF and XML can be fetched), failed (rendering or archiving failed after the invoicer's attempts: see failureReason and failureTaskId; retried, the same document becomes archived under the same number)"`
	URL             string  `json:"url" required:"true"`
	OrderNo         string  `json:"orderNo" required:"true"`
	PaymentRef      *string `json:"paymentRef" required:"true"`
	Type            string  `json:"type" required:"true" enum:"invoice,voucher_sale,cancellation,credit_note" description:"invoice; voucher_sale (gift cards, not subject to VAT, a separate document of the order); cancellation (Stornorechnung); credit_note (Rechnungskorrektur of a partial refund, or the cancellation of what partial refunds left of an invoice when its order is cancelled)"`
	Format          string  `json:"format" required:"true" enum:"zugferd,xrechnung,small_amount" description:"small_amount: a small-amount invoice (Kleinbetragsrechnung, § 33 UStDV), a PDF only"`
	IssueDate       string  `json:"issueDate" required:"true" format:"date"`
	Currency        string  `json:"currency" required:"true"`
	TotalNetCents   int64   `json:"totalNetCents" required:"true"`
	TotalTaxCents   int64   `json:"totalTaxCents" required:"true"`
	TotalGrossCents int64   `json:"totalGrossCents" required:"true"`
	TestMode        bool    `json:"testMode" required:"true"`
	PDFURL          string  `json:"pdfUrl" required:"true"`
	XMLURL          *string `json:"xmlUrl" required:"true" description:"null for a small-amount invoice (format small_amount, § 33 UStDV), which is a PDF only"`
	CreatedAt       string  `json:"createdAt" required:"true" format:"date-time"`
	ArchivedAt      *string `json:"archivedAt" required:"true" format:"date-time"`
	FailureReason   *string `json:"failureReason" required:"true" description:"while status is failed: why rendering or archiving the document failed after the invoicer's attempts (the last retry's error); it keeps its number and is retried until archived. null otherwise"`
	FailureTaskID   *string `json:"failureTaskId" required:"true" format:"uuid" description:"while status is failed: the order's invoicing_failed review task (GET /v1/tasks/{id}), resolved when a retry archives the document. null otherwise"`
	// Delivery is set by GET /v1/invoices/{reference} when the document is
	// e-mailed (its order has an e-mail); never in the list.
	Delivery *Delivery `json:"delivery,omitempty" description:"the e-mail of the document to the order's address (GET /v1/invoices/{reference} only; absent when the order has no e-mail)"`
}

// Delivery is the e-mail delivery record of a document.
type Delivery struct {
	Status        string  `json:"status" required:"true" enum:"pending,sent,blocked" description:"pending (being sent or retried), sent, blocked (test mode: sending blocked)"`
	Recipient     string  `json:"recipient" required:"true" format:"email"`
	SentAt        *string `json:"sentAt" required:"true" format:"date-time"`
	Attempts      int     `json:"attempts" required:"true" description:"tries so far"`
	LastError     *string `json:"lastError" required:"true" description:"the error of the last failed try"`
	LastAttemptAt *string `json:"lastAttemptAt" required:"true" format:"date-time"`
}

// InvoiceInput addresses one invoice.
type InvoiceInput struct {
	Reference   string `path:"reference" required:"true" description:"invoice UUID, invoice number, order number (the newest document) or payment reference"`
	IfNoneMatch string `header:"If-None-Match" description:"the ETag of a previous answer; 304 when unchanged"`
}

// DocumentInput addresses one invoice's document.
type DocumentInput struct {
	Reference string `path:"reference" required:"true" description:"invoice UUID, invoice number, order number (the newest document) or payment reference"`
}

// ListInvoicesInput is the query of GET /v1/invoices.
type ListInvoicesInput struct {
	Limit      int    `query:"limit" allowEmptyValue:"true" minimum:"1" maximum:"100" default:"25"`
	Cursor     string `query:"cursor" allowEmptyValue:"true" description:"opaque; the nextCursor of the previous page"`
	Status     string `query:"status" allowEmptyValue:"true" enum:"created,archived,failed"`
	Number     string `query:"number" allowEmptyValue:"true"`
	OrderNo    string `query:"orderNo" allowEmptyValue:"true"`
	PaymentRef string `query:"paymentRef" allowEmptyValue:"true"`
}

// InvoicePage is a page of GET /v1/invoices.
type InvoicePage struct {
	Data       []Invoice `json:"data" required:"true"`
	NextCursor *string   `json:"nextCursor" required:"true" description:"pass as cursor for the next page; on the last page (hasMore false) it points after the last invoice, for polling new ones later"`
	HasMore    bool      `json:"hasMore" required:"true"`
	RequestID  string    `json:"requestId" required:"true"`
}

// Task is a review task: something a person has to look at, such as an
// order held back before invoicing or a payment that matches no order.
type Task struct {
	ID         string      `json:"id" required:"true" format:"uuid"`
	Type       string      `json:"type" required:"true" description:"what the task is about; see the operation's description for the known types"`
	Status     string      `json:"status" required:"true" enum:"open,resolved"`
	OrderNo    *string     `json:"orderNo" required:"true" description:"the order the task concerns; null when it concerns none (payment_without_order, credit_balance_mismatch) or many (a cause of the project or a product: see heldOrders)"`
	CreatedAt  string      `json:"createdAt" required:"true" format:"date-time"`
	ResolvedAt *string     `json:"resolvedAt" required:"true" format:"date-time" description:"null while open"`
	Resolution *string     `json:"resolution" required:"true" description:"how the task was resolved, for example \"retried: handled\"; null while open and when resolved without a note"`
	Details    TaskDetails `json:"details" required:"true"`
	// HeldOrders and HeldOrderSample: what a hold task holds back now.
	HeldOrders      int      `json:"heldOrders" required:"true" minimum:"0" description:"how many orders the task holds back now (0 for a task that holds none, and once released); a cause of the project (seller_data_incomplete, xrechnung_contact_phone_missing, provider_rights_missing) or of a product (product_without_revenue_recognition) is one task holding all its orders"`
	HeldOrderSample []string `json:"heldOrderSample" required:"true" description:"the orderNos of up to 10 orders the task holds back now, held longest first"`
}

// TaskDetails is a task's details object as recorded: its keys depend on the
// type. It is passed through byte for byte (amounts stay integer cents).
type TaskDetails json.RawMessage

// MarshalJSON writes the recorded object; an empty value is {}.
func (d TaskDetails) MarshalJSON() ([]byte, error) {
	if len(d) == 0 {
		return []byte("{}"), nil
	}
	return d, nil
}

// UnmarshalJSON keeps the object as sent.
func (d *TaskDetails) UnmarshalJSON(b []byte) error {
	*d = append((*d)[:0], b...)
	return nil
}

// JSONSchema documents TaskDetails as a JSON object with type-dependent keys.
func (TaskDetails) JSONSchema() (jsonschema.Schema, error) {
	var s jsonschema.Schema
	s.AddType(jsonschema.Object)
	s.WithDescription("the task's details as recorded; the keys depend on the type (orderNo whenever it concerns an order)")
	return s, nil
}

// TaskInput addresses one task.
type TaskInput struct {
	ID string `path:"id" required:"true" description:"the task's id (a UUID); anything else is 404 task_not_found"`
}

// ListTasksInput is the query of GET /v1/tasks.
type ListTasksInput struct {
	Limit   int    `query:"limit" allowEmptyValue:"true" minimum:"1" maximum:"100" default:"25"`
	Cursor  string `query:"cursor" allowEmptyValue:"true" description:"opaque; the nextCursor of the previous page"`
	Status  string `query:"status" allowEmptyValue:"true" enum:"open,resolved"`
	Type    string `query:"type" allowEmptyValue:"true" pattern:"^[a-z][a-z0-9_]{0,99}$" description:"the task type, for example xrechnung_contact_phone_missing; a type no task has matches nothing"`
	OrderNo string `query:"orderNo" allowEmptyValue:"true" description:"the order number the task concerns: its own tasks, and the shared task (a cause of the project or a product) that holds or held it"`
}

// TaskPage is a page of GET /v1/tasks.
type TaskPage struct {
	Data       []Task  `json:"data" required:"true"`
	NextCursor *string `json:"nextCursor" required:"true" description:"pass as cursor for the next page; on the last page it points after the last task"`
	HasMore    bool    `json:"hasMore" required:"true"`
	RequestID  string  `json:"requestId" required:"true"`
}

// ListArchiveInput is the query of GET /v1/archive.
type ListArchiveInput struct {
	Year   int    `query:"year" required:"true" minimum:"2000" maximum:"9999" description:"the year of issue, YYYY"`
	Limit  int    `query:"limit" allowEmptyValue:"true" minimum:"1" maximum:"100" default:"25"`
	Cursor string `query:"cursor" allowEmptyValue:"true" description:"opaque; the nextCursor of the previous page"`
}

// ExportArchiveInput is the query of GET /v1/archive/export.
type ExportArchiveInput struct {
	Year int `query:"year" required:"true" minimum:"2000" maximum:"9999" description:"the year of issue, YYYY"`
}

// ArchiveEntry is one archived invoice as the auditor sees it: its objects
// as anchored when archived, and its place in its number range's hash chain.
type ArchiveEntry struct {
	InvoiceID              string          `json:"invoiceId" required:"true" format:"uuid"`
	Number                 string          `json:"number" required:"true"`
	IssueDate              string          `json:"issueDate" required:"true" format:"date"`
	Type                   string          `json:"type" required:"true" enum:"invoice,voucher_sale,cancellation,credit_note"`
	Format                 string          `json:"format" required:"true" enum:"zugferd,xrechnung,small_amount" description:"small_amount: a small-amount invoice (§ 33 UStDV), archived as its PDF alone"`
	NumberRange            string          `json:"numberRange" required:"true" description:"the number range whose hash chain the manifest belongs to"`
	ChainSeq               int64           `json:"chainSeq" required:"true" description:"position of the invoice's manifest in its number range's chain, from 1, in number order"`
	ManifestSHA256         string          `json:"manifestSha256" required:"true" description:"SHA-256 (hex) of the invoice's manifest: the chain hash"`
	PreviousManifestSHA256 *string         `json:"previousManifestSha256" required:"true" description:"SHA-256 of the manifest before it in the number range; null for the first"`
	Objects                []ArchiveObject `json:"objects" required:"true" description:"xml, pdf and manifest, as recorded when archived"`
}

// ArchiveObject is one archived object as recorded when it was archived.
type ArchiveObject struct {
	Kind        string  `json:"kind" required:"true" enum:"xml,pdf,manifest"`
	Key         string  `json:"key" required:"true"`
	VersionID   string  `json:"versionId" required:"true"`
	SHA256      string  `json:"sha256" required:"true" description:"hex SHA-256 of the stored bytes"`
	Size        int64   `json:"size" required:"true" description:"bytes"`
	RetainUntil *string `json:"retainUntil" required:"true" format:"date-time" description:"end of the COMPLIANCE retention"`
	EmbeddedIn  string  `json:"embeddedIn,omitempty" enum:"pdf" description:"pdf: this XML is archived only inside the document's PDF/A-3 (the embedded file factur-x.xml of a ZUGFeRD invoice); key, versionId and retainUntil are the PDF object's, sha256 and size the embedded file's. Absent: an object of its own"`
	ByteOffset  *int64  `json:"byteOffset,omitempty" minimum:"0" description:"set for a document in a batch object (the PDFs, or the manifests, of live documents chained together, one after another in one object): the document is the size bytes from this offset of the object key and versionId name, sha256 is theirs; key, versionId and retainUntil are the batch object's. Absent: the whole object"`
}

// ArchivePage is a page of GET /v1/archive.
type ArchivePage struct {
	Data       []ArchiveEntry `json:"data" required:"true"`
	NextCursor *string        `json:"nextCursor" required:"true" description:"pass as cursor for the next page; on the last page it points after the last entry"`
	HasMore    bool           `json:"hasMore" required:"true"`
	RequestID  string         `json:"requestId" required:"true"`
}
