package render

import (
	"bytes"
	"regexp"
	"testing"
)

// TestFontSelectionOnChange: with maroto's font selecting only what
// changes the font (fontSelector), every page's content is exactly the
// content laid out without it minus the selections of the font already
// selected, for every sample and a document of several pages.
func TestFontSelectionOnChange(t *testing.T) {
	t.Parallel()
	samples, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	var xmls [][]byte
	for _, s := range samples {
		for _, d := range s.Documents {
			xmls = append(xmls, d.XML)
		}
	}
	items := regexp.MustCompile(`(?s)\s*<ram:IncludedSupplyChainTradeLineItem>.*</ram:IncludedSupplyChainTradeLineItem>`)
	loc := items.FindIndex(xmls[0])
	if loc == nil {
		t.Fatal("no line items")
	}
	long := bytes.Join([][]byte{xmls[0][:loc[0]], bytes.Repeat(xmls[0][loc[0]:loc[1]], 60), xmls[0][loc[1]:]}, nil)
	xmls = append(xmls, long)

	dropped, pages := 0, 0
	for i, x := range xmls {
		v, err := readView(x, false)
		if err != nil {
			t.Fatal(err)
		}
		before, _, err := layoutWith(v, false)
		if err != nil {
			t.Fatal(err)
		}
		after, _, err := layoutWith(v, true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := readPlain(before)
		if err != nil {
			t.Fatal(err)
		}
		a, err := readPlain(after)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.objects) != len(b.objects) {
			t.Fatalf("document %d: %d objects, %d without the selector", i, len(a.objects), len(b.objects))
		}
		for k, o := range b.objects {
			want, n := o.body, 0
			if data, ok := streamOf(o.body); ok {
				want, n = dropSameFont(data)
				dropped += n
				if bytes.Contains(data, []byte(" Tj ET")) {
					pages++
				}
			}
			got := a.objects[k].body
			if data, ok := streamOf(got); ok {
				got = data
			}
			if !bytes.Equal(got, want) {
				t.Errorf("document %d, object %d differs from the layout without the selector, less %d repeated selections", i, o.num, n)
			}
		}
	}
	if dropped == 0 || pages <= len(xmls) {
		t.Errorf("%d repeated font selections left out on %d pages: the test shows nothing", dropped, pages)
	}
	t.Logf("%d documents, %d pages: %d repeated font selections left out", len(xmls), pages, dropped)
}

// streamOf returns the data of a stream object gofpdf wrote.
func streamOf(body []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(body, []byte("<</Length "))
	if !ok {
		return nil, false
	}
	n, ok := leadingInt(rest)
	i := bytes.Index(body, []byte(">>\nstream\n"))
	if !ok || i < 0 || len(body) < i+len(">>\nstream\n")+n {
		return nil, false
	}
	return body[i+len(">>\nstream\n"):][:n], true
}

var fontSelection = regexp.MustCompile(`^BT /F\d+ [\d.]+ Tf ET$`)

// dropSameFont leaves out of a page's content each font selection of
// maroto's equal to the one before it, and says how many. A page after the
// first begins with gofpdf's own settings, the font twice among them
// (before and after the colours), which are kept.
func dropSameFont(content []byte) ([]byte, int) {
	lines := bytes.Split(content, []byte("\n"))
	start := 0
	if len(lines) > 4 && bytes.HasSuffix(lines[0], []byte(" J")) && bytes.HasSuffix(lines[1], []byte(" j")) &&
		bytes.HasSuffix(lines[2], []byte(" w")) && fontSelection.Match(lines[3]) {
		for i := 4; i < min(len(lines), 8); i++ {
			if fontSelection.Match(lines[i]) {
				start = i + 1
				break
			}
		}
	}
	out := lines[:start:start]
	var last []byte
	if start > 0 {
		last = lines[start-1]
	}
	n := 0
	for _, l := range lines[start:] {
		if fontSelection.Match(l) {
			if bytes.Equal(l, last) {
				n++
				continue
			}
			last = l
		}
		out = append(out, l)
	}
	return bytes.Join(out, []byte("\n")), n
}
