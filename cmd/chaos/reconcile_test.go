package main

import (
	"fmt"
	"testing"
)

func good(orderNo string, seq int) (orderStatus, invoice) {
	num := fmt.Sprintf("TEST-2026-%06d", seq)
	st := orderStatus{found: true, Status: "invoiced"}
	st.Invoices = append(st.Invoices, struct {
		ID     string `json:"id"`
		Number string `json:"number"`
		Status string `json:"status"`
		Type   string `json:"type"`
	}{ID: orderNo, Number: num, Status: "archived", Type: "invoice"})
	return st, invoice{ID: orderNo, Number: num, Status: "archived", OrderNo: orderNo, Type: "invoice"}
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	type world struct {
		acked    []string
		statuses map[string]orderStatus
		invoices []invoice
	}
	build := func(n int, change func(w *world)) world {
		w := world{statuses: map[string]orderStatus{}}
		for i := 1; i <= n; i++ {
			o := fmt.Sprintf("O-%d", i)
			st, inv := good(o, i)
			w.acked = append(w.acked, o)
			w.statuses[o] = st
			w.invoices = append(w.invoices, inv)
		}
		if change != nil {
			change(&w)
		}
		return w
	}
	tests := []struct {
		name     string
		w        world
		want     figures
		problems int
	}{
		{"all invoiced once, gapless", build(3, nil), figures{Invoiced: 3, Invoices: 3, Ranges: 1}, 0},
		{"an acknowledged order is lost", build(3, func(w *world) {
			delete(w.statuses, "O-2")
			w.invoices = append(w.invoices[:1], w.invoices[2:]...)
		}), figures{Lost: 1, Invoiced: 2, Invoices: 2, Gaps: 1, Ranges: 1}, 2},
		{"an order invoiced twice", build(2, func(w *world) {
			st, inv := good("O-2", 3)
			s := w.statuses["O-2"]
			s.Invoices = append(s.Invoices, st.Invoices[0])
			w.statuses["O-2"] = s
			w.invoices = append(w.invoices, inv)
		}), figures{Invoiced: 1, DuplicateInvoices: 1, Invoices: 3, Ranges: 1}, 1},
		{"a number used twice", build(2, func(w *world) {
			w.invoices[1].Number = w.invoices[0].Number
		}), figures{Invoiced: 2, Invoices: 2, DuplicateNumbers: 1, Ranges: 1}, 1},
		{"a gap in the range", build(3, func(w *world) {
			w.invoices[2].Number = "TEST-2026-000005"
		}), figures{Invoiced: 3, Invoices: 3, Gaps: 2, Ranges: 1}, 1},
		{"an order not archived yet", build(2, func(w *world) {
			s := w.statuses["O-1"]
			s.Invoices[0].Status = "created"
			w.statuses["O-1"] = s
		}), figures{Invoiced: 1, Invoices: 2, Ranges: 1}, 1},
		{"an invoice of an order no client was told of", build(1, func(w *world) {
			_, inv := good("O-X", 2)
			w.invoices = append(w.invoices, inv)
		}), figures{Invoiced: 1, Invoices: 2, Ranges: 1}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, problems, _ := reconcile(tc.w.acked, tc.w.statuses, tc.w.invoices)
			if got != tc.want || len(problems) != tc.problems {
				t.Errorf("got %+v with %d problems %q, want %+v with %d", got, len(problems), problems, tc.want, tc.problems)
			}
		})
	}
}

func TestReconcileMail(t *testing.T) {
	t.Parallel()
	docs := func() []delivery {
		return []delivery{
			{InvoiceID: "i1", Number: "RE-1", Status: "sent", MessageID: "a@x", Recipient: "o-1@example.com", Attempts: 1},
			{InvoiceID: "i2", Number: "RE-2", Status: "sent", MessageID: "b@x", Recipient: "o-2@example.com", Attempts: 2},
		}
	}
	msgs := func() []sinkMessage {
		return []sinkMessage{{File: "1.eml", To: "o-1@example.com", MessageID: "a@x"}, {File: "2.eml", To: "O-2@example.com", MessageID: "b@x"}}
	}
	tests := []struct {
		name     string
		ds       []delivery
		msgs     []sinkMessage
		want     mailFigures
		problems int
	}{
		{"every document e-mailed once", docs(), msgs(), mailFigures{Documents: 2, Sent: 2, Received: 2, Messages: 2, Attempts: 3}, 0},
		{"a resend with the same Message-ID", docs(), append(msgs(), sinkMessage{File: "3.eml", To: "o-1@example.com", MessageID: "a@x"}),
			mailFigures{Documents: 2, Sent: 2, Received: 2, Messages: 3, Resends: 1, Attempts: 3}, 0},
		{"a second copy with another Message-ID", docs(), append(msgs(), sinkMessage{File: "3.eml", To: "o-1@example.com", MessageID: "c@x"}),
			mailFigures{Documents: 2, Sent: 2, Received: 2, Messages: 3, OtherMessageID: 1, Attempts: 3}, 1},
		{"a document never received", docs(), msgs()[:1], mailFigures{Documents: 2, Sent: 2, Received: 1, Messages: 1, Attempts: 3}, 1},
		{"a delivery still pending", func() []delivery { d := docs(); d[1].Status = "pending"; return d }(), msgs(),
			mailFigures{Documents: 2, Sent: 1, Received: 2, Messages: 2, Attempts: 3}, 1},
		{"sent without a Message-ID", func() []delivery { d := docs(); d[0].MessageID = ""; return d }(), msgs(),
			mailFigures{Documents: 2, Sent: 1, Received: 2, Messages: 2, OtherMessageID: 1, Attempts: 3}, 2},
		{"a document without delivery", func() []delivery { d := docs(); d[1].Recipient, d[1].Status = "", ""; return d }(), msgs()[:1],
			mailFigures{Documents: 2, Sent: 1, Received: 1, Messages: 1, Attempts: 3}, 1},
		{"two documents with one Message-ID", func() []delivery { d := docs(); d[1].MessageID = "a@x"; return d }(),
			[]sinkMessage{{File: "1.eml", To: "o-1@example.com", MessageID: "a@x"}, {File: "2.eml", To: "o-2@example.com", MessageID: "a@x"}},
			mailFigures{Documents: 2, Sent: 2, Received: 2, Messages: 2, Attempts: 3}, 1},
		{"a message of no document", docs(), append(msgs(), sinkMessage{File: "3.eml", To: "o-9@example.com", MessageID: "z@x"}),
			mailFigures{Documents: 2, Sent: 2, Received: 2, Messages: 3, Unexpected: 1, Attempts: 3}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, problems := reconcileMail(tc.ds, tc.msgs)
			if got != tc.want || len(problems) != tc.problems {
				t.Errorf("got %+v with %d problems %q, want %+v with %d", got, len(problems), problems, tc.want, tc.problems)
			}
		})
	}
}

func TestReconcileArchive(t *testing.T) {
	t.Parallel()
	const bucket, project = "b", "p"
	ids := []string{"i1", "i2"}
	world := func() ([]anchor, []objectVersion) {
		var as []anchor
		var vs []objectVersion
		for _, id := range ids {
			for _, k := range []struct{ kind, key string }{{"xml", "p/invoices/" + id + ".xml"}, {"pdf", "p/invoices/" + id + ".pdf"}, {"manifest", "p/manifests/" + id + ".json"}} {
				as = append(as, anchor{InvoiceID: id, Kind: k.kind, Bucket: bucket, Key: k.key, VersionID: "v-" + k.key})
				vs = append(vs, objectVersion{Key: k.key, VersionID: "v-" + k.key})
			}
		}
		return as, vs
	}
	tests := []struct {
		name     string
		change   func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion)
		want     archiveFigures
		problems int
	}{
		{"one version of every part", nil, archiveFigures{Expected: 6, Objects: 6, Versions: 6}, 0},
		{"a second version of a part", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			return as, append(vs, objectVersion{Key: "p/invoices/i1.pdf", VersionID: "v2"})
		}, archiveFigures{Expected: 6, Objects: 6, Versions: 7, Duplicates: 1}, 1},
		{"a part missing", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			return as, vs[1:]
		}, archiveFigures{Expected: 6, Objects: 5, Versions: 5, Missing: 1}, 1},
		{"an object of no document", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			return as, append(vs, objectVersion{Key: "p/invoices/i9.xml", VersionID: "v9"})
		}, archiveFigures{Expected: 6, Objects: 7, Versions: 7, Unexpected: 1}, 1},
		{"anchored to a version the bucket lacks", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as[2].VersionID = "gone"
			return as, vs
		}, archiveFigures{Expected: 6, Objects: 6, Versions: 6, Unanchored: 1}, 1},
		{"a part without anchor", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			return as[:5], vs
		}, archiveFigures{Expected: 6, Objects: 6, Versions: 6, Unanchored: 1}, 1},
		{"a part deleted", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			vs[0].DeleteMarker = true
			return as, vs
		}, archiveFigures{Expected: 6, Objects: 6, Versions: 6, Missing: 1}, 1},
	}
	// ZUGFeRD: the XML kept only inside the PDF (i2's), anchored to the PDF's version.
	embed := func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
		as[3] = anchor{InvoiceID: "i2", Kind: "xml", Bucket: bucket, Key: "p/invoices/i2.pdf", VersionID: "v-p/invoices/i2.pdf", EmbeddedIn: "pdf"}
		return as, append(vs[:3], vs[4:]...)
	}
	tests = append(tests, []struct {
		name     string
		change   func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion)
		want     archiveFigures
		problems int
	}{
		{"an XML inside its PDF", embed, archiveFigures{Expected: 5, Objects: 5, Versions: 5}, 0},
		{"an XML inside its PDF and an XML object besides", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as, vs = embed(as, vs)
			return as, append(vs, objectVersion{Key: "p/invoices/i2.xml", VersionID: "v9"})
		}, archiveFigures{Expected: 5, Objects: 6, Versions: 6, Unexpected: 1}, 1},
		{"an XML inside another version of its PDF", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as, vs = embed(as, vs)
			as[3].VersionID = "v-old"
			return as, vs
		}, archiveFigures{Expected: 5, Objects: 5, Versions: 5, Unanchored: 1}, 1},
	}...)
	// Both manifests in one manifest batch, anchored to its version.
	batch := func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
		as[2] = anchor{InvoiceID: "i1", Kind: "manifest", Bucket: bucket, Key: "p/manifests/batches/i1-2", VersionID: "vb", InBatch: true}
		as[5] = anchor{InvoiceID: "i2", Kind: "manifest", Bucket: bucket, Key: "p/manifests/batches/i1-2", VersionID: "vb", InBatch: true}
		kept := []objectVersion{vs[0], vs[1], vs[3], vs[4], {Key: "p/manifests/batches/i1-2", VersionID: "vb"}}
		return as, kept
	}
	tests = append(tests, []struct {
		name     string
		change   func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion)
		want     archiveFigures
		problems int
	}{
		{"two manifests in one batch", batch, archiveFigures{Expected: 5, Objects: 5, Versions: 5}, 0},
		{"the batch missing: counted once", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as, vs = batch(as, vs)
			return as, vs[:4]
		}, archiveFigures{Expected: 5, Objects: 4, Versions: 4, Missing: 1}, 1},
		{"a second version of the batch: counted once", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as, vs = batch(as, vs)
			return as, append(vs, objectVersion{Key: "p/manifests/batches/i1-2", VersionID: "vb2"})
		}, archiveFigures{Expected: 5, Objects: 5, Versions: 6, Duplicates: 1}, 1},
		{"one manifest anchored to another version of the batch", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as, vs = batch(as, vs)
			as[5].VersionID = "v-old"
			return as, vs
		}, archiveFigures{Expected: 5, Objects: 5, Versions: 5, Unanchored: 1}, 1},
		{"a batch of another project's keys", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as, vs = batch(as, vs)
			as[5].Key = "q/manifests/batches/i1-2"
			return as, vs
		}, archiveFigures{Expected: 6, Objects: 5, Versions: 5, Missing: 1}, 1},
	}...)
	// Both PDFs in one document batch, anchored to its version.
	docBatch := func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
		as[1] = anchor{InvoiceID: "i1", Kind: "pdf", Bucket: bucket, Key: "p/invoices/batches/i1-2", VersionID: "vd", InBatch: true}
		as[4] = anchor{InvoiceID: "i2", Kind: "pdf", Bucket: bucket, Key: "p/invoices/batches/i1-2", VersionID: "vd", InBatch: true}
		kept := []objectVersion{vs[0], vs[2], vs[3], vs[5], {Key: "p/invoices/batches/i1-2", VersionID: "vd"}}
		return as, kept
	}
	// …and i2's XML kept only inside its PDF, in the batch.
	docBatchEmbedded := func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
		as, vs = docBatch(as, vs)
		as[3] = anchor{InvoiceID: "i2", Kind: "xml", Bucket: bucket, Key: "p/invoices/batches/i1-2", VersionID: "vd", EmbeddedIn: "pdf"}
		return as, append(vs[:2], vs[3:]...)
	}
	tests = append(tests, []struct {
		name     string
		change   func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion)
		want     archiveFigures
		problems int
	}{
		{"two PDFs in one document batch", docBatch, archiveFigures{Expected: 5, Objects: 5, Versions: 5}, 0},
		{"an XML inside its PDF in a document batch", docBatchEmbedded, archiveFigures{Expected: 4, Objects: 4, Versions: 4}, 0},
		{"an XML inside another version of the batch", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as, vs = docBatchEmbedded(as, vs)
			as[3].VersionID = "v-old"
			return as, vs
		}, archiveFigures{Expected: 4, Objects: 4, Versions: 4, Unanchored: 1}, 1},
		{"the document batch missing: counted once", func(as []anchor, vs []objectVersion) ([]anchor, []objectVersion) {
			as, vs = docBatch(as, vs)
			return as, vs[:4]
		}, archiveFigures{Expected: 5, Objects: 4, Versions: 4, Missing: 1}, 1},
	}...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			as, vs := world()
			if tc.change != nil {
				as, vs = tc.change(as, vs)
			}
			tc.want.Bucket, tc.want.Documents = bucket, len(ids)
			got, problems := reconcileArchive(bucket, project, ids, as, vs)
			if got != tc.want || len(problems) != tc.problems {
				t.Errorf("got %+v with %d problems %q, want %+v with %d", got, len(problems), problems, tc.want, tc.problems)
			}
		})
	}
}
