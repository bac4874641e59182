package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/o2i-service/o2i/archive"
)

// orderStatus is what GET /v1/orders/{orderNo} says (404: found false).
type orderStatus struct {
	found    bool
	Status   string `json:"status"`
	Invoices []struct {
		ID     string `json:"id"`
		Number string `json:"number"`
		Status string `json:"status"`
		Type   string `json:"type"`
	} `json:"invoices"`
}

// invoice is an entry of GET /v1/invoices.
type invoice struct {
	ID              string `json:"id"`
	Number          string `json:"number"`
	Status          string `json:"status"`
	OrderNo         string `json:"orderNo"`
	Type            string `json:"type"`
	TotalGrossCents int64  `json:"totalGrossCents"`
}

// figures are the reconciliation's counts.
type figures struct {
	Lost              int `json:"acknowledgedOrdersLost"`
	Invoiced          int `json:"ordersWithOneArchivedInvoice"`
	DuplicateInvoices int `json:"ordersWithMoreThanOneInvoice"`
	Invoices          int `json:"invoicesListed"`
	DuplicateNumbers  int `json:"duplicateNumbers"`
	Gaps              int `json:"numbersMissingInRanges"`
	Ranges            int `json:"numberRanges"`
}

// span is one number range: its lowest and highest sequence number.
type span struct{ First, Last int }

// reconcile checks what the API says against the acknowledged orders:
// every one exists and has exactly one invoice, archived; the invoice
// listing has no second invoice of an order and no order it was not told
// of; the numbers are unique and each range (the number without its
// sequence) runs from 1 without a gap. Pure: the reads are done before.
func reconcile(acked []string, statuses map[string]orderStatus, invoices []invoice) (figures, []string, map[string]span) {
	var f figures
	var problems []string
	report := func(format string, args ...any) {
		if len(problems) < 50 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	ackedSet := make(map[string]bool, len(acked))
	for _, o := range acked {
		ackedSet[o] = true
		st, ok := statuses[o]
		switch {
		case !ok || !st.found:
			f.Lost++
			report("order %s was acknowledged but the API does not know it", o)
			continue
		case len(st.Invoices) > 1:
			f.DuplicateInvoices++
			report("order %s has %d documents", o, len(st.Invoices))
		case len(st.Invoices) == 1 && st.Invoices[0].Type == "invoice" && st.Invoices[0].Status == "archived" && st.Status == "invoiced":
			f.Invoiced++
		default:
			report("order %s: status %s with %d documents, want invoiced with one archived invoice", o, st.Status, len(st.Invoices))
		}
	}
	f.Invoices = len(invoices)
	perOrder := map[string]int{}
	numbers := map[string]int{}
	seqs := map[string][]int{}
	for _, inv := range invoices {
		perOrder[inv.OrderNo]++
		numbers[inv.Number]++
		if !ackedSet[inv.OrderNo] {
			report("invoice %s of order %s, which no client was told was accepted", inv.Number, inv.OrderNo)
		}
		i := strings.LastIndexByte(inv.Number, '-')
		seq, err := strconv.Atoi(inv.Number[i+1:])
		if i < 0 || err != nil {
			report("invoice number %q has no sequence", inv.Number)
			continue
		}
		seqs[inv.Number[:i]] = append(seqs[inv.Number[:i]], seq)
	}
	for o, n := range perOrder {
		if n > 1 && len(statuses[o].Invoices) <= 1 {
			f.DuplicateInvoices++
			report("order %s has %d invoices in the listing", o, n)
		}
	}
	for num, n := range numbers {
		if n > 1 {
			f.DuplicateNumbers += n - 1
			report("invoice number %s is used %d times", num, n)
		}
	}
	ranges := map[string]span{}
	for prefix, s := range seqs {
		sort.Ints(s)
		ranges[prefix] = span{First: s[0], Last: s[len(s)-1]}
		want := 1
		for _, n := range s {
			if n > want {
				f.Gaps += n - want
				report("range %s: numbers %d to %d missing", prefix, want, n-1)
			}
			want = max(want, n+1)
		}
	}
	f.Ranges = len(ranges)
	return f, problems, ranges
}

// parallel runs fn for every item on 8 workers and collects the errors.
func parallel[T any](items []T, fn func(T) error) []error {
	ch := make(chan T)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := fn(it); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, it := range items {
		ch <- it
	}
	close(ch)
	wg.Wait()
	return errs
}

// orderStatuses reads every order's status record.
func (a *apiClient) orderStatuses(ctx context.Context, orders []string) (map[string]orderStatus, error) {
	out := make(map[string]orderStatus, len(orders))
	var mu sync.Mutex
	errs := parallel(orders, func(o string) error {
		status, body, err := a.get(ctx, "/v1/orders/"+url.PathEscape(o))
		if err != nil {
			return err
		}
		var st orderStatus
		switch status {
		case 200:
			var env struct {
				Data orderStatus `json:"data"`
			}
			if err := json.Unmarshal(body, &env); err != nil {
				return fmt.Errorf("order %s: %w", o, err)
			}
			st = env.Data
			st.found = true
		case 404:
		default:
			return fmt.Errorf("GET order %s: %d %.200s", o, status, body)
		}
		mu.Lock()
		out[o] = st
		mu.Unlock()
		return nil
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("%d order reads failed, first: %w", len(errs), errs[0])
	}
	return out, nil
}

// waitArchived polls the orders until each is invoiced with an archived
// invoice, or until deadline; it returns the ones still pending.
func (a *apiClient) waitArchived(ctx context.Context, orders []string, deadline time.Time) ([]string, error) {
	pending := orders
	for len(pending) > 0 {
		statuses, err := a.orderStatuses(ctx, pending)
		if err != nil {
			return nil, err
		}
		var still []string
		for _, o := range pending {
			st := statuses[o]
			if !st.found || st.Status != "invoiced" || len(st.Invoices) == 0 || st.Invoices[len(st.Invoices)-1].Status != "archived" {
				still = append(still, o)
			}
		}
		pending = still
		if len(pending) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		sleep(ctx, 5*time.Second)
	}
	sort.Strings(pending)
	return pending, ctx.Err()
}

// listInvoices reads the project's whole invoice listing, page by page.
func (a *apiClient) listInvoices(ctx context.Context) ([]invoice, error) {
	var all []invoice
	cursor := ""
	for {
		path := "/v1/invoices?limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, body, err := a.get(ctx, path)
		if err != nil {
			return nil, err
		}
		if status != 200 {
			return nil, fmt.Errorf("GET %s: %d %.200s", path, status, body)
		}
		var page struct {
			Data       []invoice `json:"data"`
			NextCursor *string   `json:"nextCursor"`
			HasMore    bool      `json:"hasMore"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if !page.HasMore || page.NextCursor == nil { // the last page's cursor points after it, for later polls
			return all, nil
		}
		cursor = *page.NextCursor
	}
}

// verifyDocuments fetches every invoice's XML and PDF: the archive checks
// each object against its SHA-256 on read, so a 200 is a verified object;
// the XML must carry the invoice's number and gross total, the PDF be a
// PDF with the XML embedded.
func (a *apiClient) verifyDocuments(ctx context.Context, invoices []invoice) (int, []string) {
	var mu sync.Mutex
	verified := 0
	errs := parallel(invoices, func(inv invoice) error {
		status, xml, err := a.get(ctx, "/v1/invoices/"+inv.ID+"/xml")
		if err != nil || status != 200 {
			return fmt.Errorf("invoice %s XML: %d %v", inv.Number, status, err)
		}
		gross := fmt.Sprintf("%d.%02d", inv.TotalGrossCents/100, inv.TotalGrossCents%100)
		if !bytes.Contains(xml, []byte(">"+inv.Number+"<")) || !bytes.Contains(xml, []byte(">"+gross+"<")) {
			return fmt.Errorf("invoice %s: the archived XML lacks its number or gross total %s", inv.Number, gross)
		}
		status, pdf, err := a.get(ctx, "/v1/invoices/"+inv.ID+"/pdf")
		if err != nil || status != 200 {
			return fmt.Errorf("invoice %s PDF: %d %v", inv.Number, status, err)
		}
		if !bytes.HasPrefix(pdf, []byte("%PDF-")) || !bytes.Contains(pdf, []byte("factur-x.xml")) {
			return fmt.Errorf("invoice %s: the archived PDF is not a PDF with factur-x.xml", inv.Number)
		}
		mu.Lock()
		verified += 2
		mu.Unlock()
		return nil
	})
	var problems []string
	for i, e := range errs {
		if i == 20 {
			problems = append(problems, fmt.Sprintf("... and %d more document problems", len(errs)-20))
			break
		}
		problems = append(problems, e.Error())
	}
	return verified, problems
}

// delivery is one document of the project with its e-mail delivery (empty
// fields when it has none).
type delivery struct {
	InvoiceID, Number, Status, MessageID, Recipient string
	Attempts                                        int
}

// sinkMessage is one message the SMTP sink received for the run.
type sinkMessage struct {
	File, To, MessageID string
}

// mailFigures are the e-mail checks' counts.
type mailFigures struct {
	Documents      int `json:"documents"`
	Sent           int `json:"sentWithOneMessageID"`
	Received       int `json:"documentsAtTheSink"`
	Messages       int `json:"messagesAtTheSink"`
	Resends        int `json:"resendsWithTheSameMessageID"`
	OtherMessageID int `json:"copiesWithAnotherMessageID"`
	Unexpected     int `json:"messagesOfNoDocument"`
	Attempts       int `json:"deliveryAttempts"`
}

// reconcileMail checks that every document was e-mailed: its delivery is
// sent with a Message-ID of its own, and every message at the sink to its
// recipient carries that Message-ID (more than one copy is a resend after
// a crash, allowed only as the same message). Pure.
func reconcileMail(ds []delivery, msgs []sinkMessage) (mailFigures, []string) {
	var f mailFigures
	var problems []string
	report := func(format string, args ...any) {
		if len(problems) < 50 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	byTo := map[string][]sinkMessage{}
	for _, m := range msgs {
		byTo[strings.ToLower(m.To)] = append(byTo[strings.ToLower(m.To)], m)
	}
	f.Messages = len(msgs)
	ids := map[string]string{} // Message-ID → invoice number
	known := map[string]bool{}
	for _, d := range ds {
		f.Documents++
		f.Attempts += d.Attempts
		if d.Recipient == "" {
			report("invoice %s has no e-mail delivery", d.Number)
			continue
		}
		known[strings.ToLower(d.Recipient)] = true
		switch {
		case d.Status != "sent":
			report("invoice %s: delivery %s, want sent", d.Number, d.Status)
		case d.MessageID == "":
			report("invoice %s: sent without a Message-ID", d.Number)
		default:
			f.Sent++
		}
		if other, ok := ids[d.MessageID]; ok && d.MessageID != "" {
			report("invoices %s and %s share the Message-ID %s", other, d.Number, d.MessageID)
		}
		ids[d.MessageID] = d.Number
		got := byTo[strings.ToLower(d.Recipient)]
		if len(got) == 0 {
			report("invoice %s: no message to %s at the sink", d.Number, d.Recipient)
			continue
		}
		f.Received++
		same := 0
		for _, m := range got {
			if m.MessageID == d.MessageID {
				same++
			} else {
				f.OtherMessageID++
				report("invoice %s: message %s at the sink has Message-ID %q, the delivery %q", d.Number, m.File, m.MessageID, d.MessageID)
			}
		}
		f.Resends += max(0, same-1)
	}
	for to, got := range byTo {
		if !known[to] {
			f.Unexpected += len(got)
			report("%d messages to %s at the sink, which is no document's recipient", len(got), to)
		}
	}
	return f, problems
}

// anchor is a row of archive_objects: the object an archived document's
// part is anchored to.
type anchor struct {
	InvoiceID, Kind, Bucket, Key, VersionID string
	EmbeddedIn                              string // "pdf": an XML kept only inside the PDF, which Key and VersionID name
	InBatch                                 bool   // a manifest in a manifest batch or a PDF in a document batch, which Key and VersionID name
}

// objectVersion is one version of an object in the archive bucket.
type objectVersion struct {
	Key, VersionID string
	DeleteMarker   bool
}

// archiveFigures are the archive bucket checks' counts.
type archiveFigures struct {
	Bucket     string `json:"bucket"`
	Documents  int    `json:"documents"`
	Expected   int    `json:"objectsExpected"`
	Objects    int    `json:"objectsInTheBucket"`
	Versions   int    `json:"versionsInTheBucket"`
	Duplicates int    `json:"duplicateVersions"`
	Missing    int    `json:"objectsMissing"`
	Unexpected int    `json:"objectsOfNoDocument"`
	Unanchored int    `json:"notTheAnchoredVersion"`
}

// reconcileArchive checks the project's objects in the bucket against its
// documents: each document has its XML, PDF and manifest, each exactly
// one version (a write retried after a crash must not leave a second), the
// version its anchor names; the project holds no other object. An XML
// anchored inside the PDF (a ZUGFeRD invoice) is no object of its own: its
// anchor must name the PDF's anchored version. A manifest in a manifest
// batch, or a PDF in a document batch, lies in the batch object its anchor
// names, one object for all of the batch's documents. Pure.
func reconcileArchive(bucket, projectID string, invoiceIDs []string, anchors []anchor, versions []objectVersion) (archiveFigures, []string) {
	f := archiveFigures{Bucket: bucket, Documents: len(invoiceIDs)}
	var problems []string
	report := func(format string, args ...any) {
		if len(problems) < 50 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	byKey := map[string][]objectVersion{}
	for _, v := range versions {
		byKey[v.Key] = append(byKey[v.Key], v)
		f.Versions++
	}
	f.Objects = len(byKey)
	anchored := map[string]anchor{}
	for _, a := range anchors {
		anchored[a.InvoiceID+"/"+a.Kind] = a
	}
	expected := map[string]bool{}
	var keys []string // the expected keys in the order first seen
	for _, id := range invoiceIDs {
		pdfKey := archive.InvoicePDFKey(projectID, id)
		if p := anchored[id+"/pdf"]; p.InBatch && strings.HasPrefix(p.Key, archive.DocumentBatchPrefix(projectID)) {
			pdfKey = p.Key
		}
		if x, ok := anchored[id+"/xml"]; ok && x.EmbeddedIn != "" {
			pdf := anchored[id+"/pdf"]
			if x.EmbeddedIn != "pdf" || x.Bucket != bucket || x.Key != pdfKey || x.VersionID != pdf.VersionID {
				f.Unanchored++
				report("%s: the XML is anchored inside %s %q in %q, not the anchored PDF %q", pdfKey, x.Key, x.VersionID, x.Bucket, pdf.VersionID)
			}
		}
		manifestKey := archive.ManifestKey(projectID, id)
		if m := anchored[id+"/manifest"]; m.InBatch && strings.HasPrefix(m.Key, archive.ManifestBatchPrefix(projectID)) {
			manifestKey = m.Key
		}
		for _, part := range []struct{ kind, key string }{
			{"xml", archive.InvoiceXMLKey(projectID, id)},
			{"pdf", pdfKey},
			{"manifest", manifestKey},
		} {
			if x := anchored[id+"/xml"]; part.kind == "xml" && x.EmbeddedIn != "" {
				continue // checked above; an object under the XML's key is unexpected
			}
			if !expected[part.key] {
				expected[part.key] = true
				keys = append(keys, part.key)
			}
			vs := byKey[part.key]
			if len(vs) == 0 || len(vs) == 1 && vs[0].DeleteMarker {
				continue // the key's own finding, below
			}
			a, ok := anchored[id+"/"+part.kind]
			inBucket := false
			for _, v := range vs {
				inBucket = inBucket || (!v.DeleteMarker && v.VersionID == a.VersionID)
			}
			if !ok || a.Bucket != bucket || a.Key != part.key || !inBucket {
				f.Unanchored++
				report("%s: anchored to %q in %q, which the bucket does not hold", part.key, a.VersionID, a.Bucket)
			}
		}
	}
	// Each expected key once (a manifest batch is one for all its documents).
	for _, key := range keys {
		f.Expected++
		switch vs := byKey[key]; {
		case len(vs) == 0:
			f.Missing++
			report("%s is not in bucket %s", key, bucket)
		case len(vs) > 1:
			f.Duplicates += len(vs) - 1
			report("%s has %d versions in bucket %s", key, len(vs), bucket)
		case vs[0].DeleteMarker:
			f.Missing++
			report("%s is deleted in bucket %s", key, bucket)
		}
	}
	for key, vs := range byKey {
		if !expected[key] {
			f.Unexpected += len(vs)
			report("%s (%d versions) in bucket %s belongs to no document of the project", key, len(vs), bucket)
		}
	}
	return f, problems
}
