package query

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
	Status          string  `json:"status" required:"true" enum:"created,archived,failed"`
	URL             string  `json:"url" required:"true"`
	OrderNo         string  `json:"orderNo" required:"true"`
	PaymentRef      *string `json:"paymentRef" required:"true"`
	Type            string  `json:"type" required:"true" enum:"invoice,voucher_sale,cancellation" description:"invoice; voucher_sale (gift cards, not subject to VAT, a separate document of the order); cancellation (Stornorechnung)"`
	Format          string  `json:"format" required:"true" enum:"zugferd,xrechnung"`
	IssueDate       string  `json:"issueDate" required:"true" format:"date"`
	Currency        string  `json:"currency" required:"true"`
	TotalNetCents   int64   `json:"totalNetCents" required:"true"`
	TotalTaxCents   int64   `json:"totalTaxCents" required:"true"`
	TotalGrossCents int64   `json:"totalGrossCents" required:"true"`
	TestMode        bool    `json:"testMode" required:"true"`
	PDFURL          string  `json:"pdfUrl" required:"true"`
	XMLURL          string  `json:"xmlUrl" required:"true"`
	CreatedAt       string  `json:"createdAt" required:"true" format:"date-time"`
	ArchivedAt      *string `json:"archivedAt" required:"true" format:"date-time"`
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
	Limit      int    `query:"limit" minimum:"1" maximum:"100" default:"25"`
	Cursor     string `query:"cursor" description:"opaque; the nextCursor of the previous page"`
	Status     string `query:"status" enum:"created,archived,failed"`
	Number     string `query:"number"`
	OrderNo    string `query:"orderNo"`
	PaymentRef string `query:"paymentRef"`
}

// InvoicePage is a page of GET /v1/invoices.
type InvoicePage struct {
	Data       []Invoice `json:"data" required:"true"`
	NextCursor *string   `json:"nextCursor" required:"true" description:"pass as cursor for the next page; null on the last page"`
	HasMore    bool      `json:"hasMore" required:"true"`
	RequestID  string    `json:"requestId" required:"true"`
}
