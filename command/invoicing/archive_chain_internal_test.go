package invoicing

import (
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
