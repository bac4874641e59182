package invoicing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/o2i-service/o2i/archive"
)

func TestNextLinks(t *testing.T) {
	t.Parallel()
	doc := func(id string, ready bool) chainCandidate {
		return chainCandidate{m: archive.Manifest{ProjectID: "p", NumberRange: "RE-2026", InvoiceID: id, Number: id}, issue: time.Now(), ready: ready}
	}
	end := chainEnd{seq: 7, sha256: "abc"}
	for _, tc := range []struct {
		name  string
		end   chainEnd
		cands []chainCandidate
		want  []string // the invoices chained, in chain order
	}{
		{"nothing to chain", end, nil, nil},
		{"the next one anchored", end, []chainCandidate{doc("1", true)}, []string{"1"}},
		{"the leading anchored ones", end, []chainCandidate{doc("1", true), doc("2", true), doc("3", false), doc("4", true)}, []string{"1", "2"}},
		{"the next one not anchored: none", end, []chainCandidate{doc("1", false), doc("2", true), doc("3", true)}, nil},
		{"the range's first manifest", chainEnd{}, []chainCandidate{doc("1", true), doc("2", true)}, []string{"1", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			links, err := nextLinks(tc.end, tc.cands)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			prev, pos := tc.end.sha256, tc.end.seq
			for _, l := range links {
				got = append(got, l.m.InvoiceID)
				pos++
				if l.m.ChainSeq != pos || l.m.PreviousManifestSHA256 != prev {
					t.Errorf("%s: position %d naming %q, want %d naming %q", l.m.InvoiceID, l.m.ChainSeq, l.m.PreviousManifestSHA256, pos, prev)
				}
				parsed, err := archive.ParseManifest(l.body)
				if err != nil || parsed.ChainSeq != pos || archive.SHA256(l.body) != l.sha256 {
					t.Errorf("%s: body %+v, %v", l.m.InvoiceID, parsed, err)
				}
				prev = l.sha256
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("chained %v, want %v", got, tc.want)
			}
		})
	}
}

func TestManifestObjects(t *testing.T) {
	t.Parallel()
	pdf := anchorRow{kind: "pdf", st: archive.Stored{Key: "k.pdf", SHA256: "p", Size: 2}}
	xml := anchorRow{kind: "xml", st: archive.Stored{Key: "k.xml", SHA256: "x", Size: 1}}
	embedded := anchorRow{kind: "xml", st: archive.Stored{Key: "k.pdf", SHA256: "x", Size: 1}, embeddedIn: "pdf"}
	for _, tc := range []struct {
		name    string
		format  string
		anchors []anchorRow
		kinds   []string
		ready   bool
	}{
		{"nothing anchored", "xrechnung", nil, nil, false},
		{"XRechnung with both", "xrechnung", []anchorRow{pdf, xml}, []string{"xml", "pdf"}, true},
		{"XRechnung without its XML", "xrechnung", []anchorRow{pdf}, []string{"pdf"}, false},
		{"ZUGFeRD, the XML inside the PDF", "zugferd", []anchorRow{embedded, pdf}, []string{"xml", "pdf"}, true},
		{"ZUGFeRD without its PDF", "zugferd", []anchorRow{embedded}, []string{"xml"}, false},
		{"small amount: the PDF alone", "small_amount", []anchorRow{pdf}, []string{"pdf"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, ready := manifestObjects(tc.format, tc.anchors)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.Kind)
				if o.Kind == "xml" && (o.EmbeddedIn == "pdf") != (tc.format == "zugferd") {
					t.Errorf("xml embedded in %q", o.EmbeddedIn)
				}
			}
			if ready != tc.ready || !slices.Equal(kinds, tc.kinds) {
				t.Errorf("objects %v ready %v, want %v %v", kinds, ready, tc.kinds, tc.ready)
			}
		})
	}
}

func TestManifestBatches(t *testing.T) {
	t.Parallel()
	y2026, y2027 := time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	link := func(id string, issue time.Time, testMode, archived bool) newLink {
		return newLink{m: archive.Manifest{ProjectID: "p", InvoiceID: id, TestMode: testMode}, issue: issue, archived: archived,
			body: []byte("{" + id + "}\n")}
	}
	live := func(id string) newLink { return link(id, y2026, false, false) }
	many := func(n int) []newLink {
		var ls []newLink
		for i := range n {
			ls = append(ls, live(fmt.Sprint(i)))
		}
		return ls
	}
	for _, tc := range []struct {
		name  string
		links []newLink
		want  map[string][]string // batch key: its invoices in order
	}{
		{"nothing chained", nil, map[string][]string{}},
		{"one live document: an object of its own", []newLink{live("a")}, map[string][]string{}},
		{"live documents of one year: one batch", []newLink{live("a"), live("b"), live("c")},
			map[string][]string{"p/manifests/batches/a-3": {"a", "b", "c"}}},
		{"test documents: objects of their own", []newLink{link("a", y2026, true, false), link("b", y2026, true, false)}, map[string][]string{}},
		{"backfilled documents: objects of their own", []newLink{link("a", y2026, false, true), link("b", y2026, false, true)}, map[string][]string{}},
		{"a test document splits the live runs", []newLink{live("a"), live("b"), link("t", y2026, true, false), live("c"), live("d")},
			map[string][]string{"p/manifests/batches/a-2": {"a", "b"}, "p/manifests/batches/c-2": {"c", "d"}}},
		{"another retention period: another batch", []newLink{live("a"), live("b"), link("c", y2027, false, false), link("d", y2027, false, false)},
			map[string][]string{"p/manifests/batches/a-2": {"a", "b"}, "p/manifests/batches/c-2": {"c", "d"}}},
		{"a run of one between others stays alone", []newLink{live("a"), link("t", y2026, true, false), live("b"), link("u", y2026, true, false)},
			map[string][]string{}},
		{"at most maxManifestBatch per batch", many(maxManifestBatch + 2),
			map[string][]string{"p/manifests/batches/0-64": nil, "p/manifests/batches/64-2": {"64", "65"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batches := manifestBatches(tc.links)
			got := map[string][]string{}
			for _, l := range tc.links {
				if l.batchKey == "" {
					continue
				}
				got[l.batchKey] = append(got[l.batchKey], l.m.InvoiceID)
				mb, ok := batches[l.batchKey]
				if !ok || !bytes.Equal(mb.data[l.offset:l.offset+int64(len(l.body))], l.body) {
					t.Errorf("%s: not at offset %d of its batch %s", l.m.InvoiceID, l.offset, l.batchKey)
				}
				if want := archive.RetainUntil(l.issue, archive.RetentionYears); !mb.until.Equal(want) {
					t.Errorf("%s: batch retained until %s, want %s", l.m.InvoiceID, mb.until, want)
				}
			}
			if len(got) != len(tc.want) || len(batches) != len(tc.want) {
				t.Fatalf("batches %v (%d), want %v", got, len(batches), tc.want)
			}
			for key, ids := range tc.want {
				if ids == nil { // a full batch: its count alone
					if len(got[key]) != maxManifestBatch {
						t.Errorf("%s holds %d, want %d", key, len(got[key]), maxManifestBatch)
					}
					continue
				}
				if !slices.Equal(got[key], ids) {
					t.Errorf("%s holds %v, want %v", key, got[key], ids)
				}
				var data []byte
				for _, l := range tc.links {
					if l.batchKey == key {
						data = append(data, l.body...)
					}
				}
				if !bytes.Equal(batches[key].data, data) {
					t.Errorf("%s: %q, want its manifests one after another %q", key, batches[key].data, data)
				}
			}
		})
	}
}

// TestPutBatchesWritesWithALiveDocumentsWriter: a batch (live documents
// only) is written once, by a live document's writer even when a test
// document of the same transaction comes first, and its object reaches the
// chained manifests and the requests; a failed write leaves them without.
func TestPutBatchesWritesWithALiveDocumentsWriter(t *testing.T) {
	t.Parallel()
	writer := func(name string, wrote *[]string, fail bool) func(context.Context, string, []byte, time.Time) (archive.Stored, error) {
		return func(_ context.Context, key string, _ []byte, _ time.Time) (archive.Stored, error) {
			*wrote = append(*wrote, name+":"+key)
			if fail {
				return archive.Stored{}, errors.New("store down")
			}
			return archive.Stored{Key: key, VersionID: "v1"}, nil
		}
	}
	for _, fail := range []bool{false, true} {
		var wrote []string
		test := &chainRequest{m: archive.Manifest{InvoiceID: "t", TestMode: true}, putBatch: writer("test", &wrote, fail)}
		live := &chainRequest{m: archive.Manifest{InvoiceID: "a"}, putBatch: writer("live", &wrote, fail),
			loc: chainedManifest{body: []byte("a"), batchKey: "p/manifests/batches/a-2"}}
		chained := map[string]chainedManifest{
			"a": live.loc,
			"b": {body: []byte("b"), batchKey: "p/manifests/batches/a-2", offset: 1},
			"t": {body: []byte("t")},
		}
		putBatches([]*chainRequest{test, live}, chained, map[string]manifestBatch{"p/manifests/batches/a-2": {data: []byte("ab")}})
		if !slices.Equal(wrote, []string{"live:p/manifests/batches/a-2"}) {
			t.Errorf("fail %v: written %v, want once by the live document's writer", fail, wrote)
		}
		for _, c := range []chainedManifest{chained["a"], chained["b"], live.loc} {
			if got := c.stored != nil && c.stored.VersionID == "v1"; got == fail {
				t.Errorf("fail %v: stored %+v", fail, c.stored)
			}
		}
		if chained["t"].stored != nil || test.loc.stored != nil {
			t.Errorf("fail %v: the test document's manifest got the batch's object", fail)
		}
	}
}

func TestDocumentBatches(t *testing.T) {
	t.Parallel()
	pdf := func(year, size int) pdfItem { return pdfItem{year: year, size: size} }
	many := func(n int) []pdfItem {
		out := make([]pdfItem, n)
		for i := range out {
			out[i] = pdf(2026, 40<<10)
		}
		return out
	}
	seq := func(from, to int) []int {
		var out []int
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		items []pdfItem
		want  [][]int
	}{
		{"none", nil, nil},
		{"one alone: an object of its own", []pdfItem{pdf(2026, 100)}, [][]int{{0}}},
		{"two of one year: a batch", []pdfItem{pdf(2026, 100), pdf(2026, 200)}, [][]int{{0, 1}}},
		{"another year apart", []pdfItem{pdf(2026, 100), pdf(2027, 100), pdf(2026, 100)}, [][]int{{0, 2}, {1}}},
		{"at most maxDocumentBatch", many(maxDocumentBatch + 2), [][]int{seq(0, maxDocumentBatch), {maxDocumentBatch, maxDocumentBatch + 1}}},
		{"cut before the PDF that would pass the size",
			[]pdfItem{pdf(2026, maxDocumentBatchBytes/2), pdf(2026, maxDocumentBatchBytes/2), pdf(2026, 1), pdf(2026, 1)},
			[][]int{{0, 1}, {2, 3}}},
		{"a PDF larger than a batch: alone", []pdfItem{pdf(2026, maxDocumentBatchBytes+1), pdf(2026, 10)}, [][]int{{0}, {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := documentBatches(tc.items)
			if !slices.EqualFunc(got, tc.want, slices.Equal[[]int]) {
				t.Errorf("documentBatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDocumentObjects(t *testing.T) {
	t.Parallel()
	xml := []byte("<rsm:CrossIndustryInvoice/>")
	pdfSt := archive.Stored{Key: "p/invoices/batches/a-2", VersionID: "v1", SHA256: "pdfsum", Size: 4000, InBatch: true, Offset: 4000,
		RetainUntil: time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC)}
	xmlSt := archive.Stored{Key: "p/invoices/a.xml", VersionID: "v2", SHA256: "xmlsum", Size: 27}
	for _, tc := range []struct {
		format string
		kinds  []string // the manifest's objects
		xml    archive.Stored
	}{
		{"zugferd", []string{"xml", "pdf"}, archive.Stored{Key: pdfSt.Key, VersionID: "v1", SHA256: archive.SHA256(xml), Size: int64(len(xml)),
			RetainUntil: pdfSt.RetainUntil}},
		{"xrechnung", []string{"xml", "pdf"}, xmlSt},
		{"small_amount", []string{"pdf"}, archive.Stored{}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			objs, m := documentObjects(tc.format, xml, pdfSt, xmlSt)
			var kinds []string
			for _, o := range m {
				kinds = append(kinds, o.Kind)
			}
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("manifest objects %v, want %v", kinds, tc.kinds)
			}
			if objs["pdf"] != pdfSt || objs["xml"] != tc.xml {
				t.Errorf("anchors %+v, want the PDF %+v and the XML %+v", objs, pdfSt, tc.xml)
			}
			last := m[len(m)-1]
			if last.Offset == nil || *last.Offset != pdfSt.Offset || last.Key != pdfSt.Key {
				t.Errorf("the PDF's manifest entry %+v, want its bytes at %d of %s", last, pdfSt.Offset, pdfSt.Key)
			}
			if len(m) == 2 && m[0].Offset != nil {
				t.Errorf("the XML's manifest entry %+v has an offset", m[0])
			}
		})
	}
}
