package render

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestFontSubset: a subset read back maps every character to a glyph with
// the original outline and advance width, renumbers the components of
// composite glyphs, and agrees with its CIDToGIDMap; its checksums are
// right.
func TestFontSubset(t *testing.T) {
	t.Parallel()
	fonts, err := libFonts() // also checks that layout and font program agree on every width
	if err != nil {
		t.Fatal(err)
	}
	runes := []rune("AZaz09 .,;:-–·€§%&()/äöüÄÖÜßéèñçÅØŁłŠšŽž")
	slices.Sort(runes)
	runes = slices.Compact(runes)
	for _, f := range fonts {
		orig := f.prog
		sub := orig.subset(runes)
		got, err := parseTTF(sub.program)
		if err != nil {
			t.Fatalf("%s: subset does not parse: %v", f.key, err)
		}
		if sum := checksum(sub.program); sum != 0xB1B0AFBA {
			t.Errorf("%s: font checksum %#x, want 0xB1B0AFBA", f.key, sum)
		}
		composites := 0
		for _, r := range runes {
			og, ng := orig.glyph[r], got.glyph[r]
			if og == 0 || ng == 0 {
				t.Fatalf("%s: %q has glyph %d, %d in the subset", f.key, r, og, ng)
			}
			if m := binary.BigEndian.Uint16(sub.cidToGID[2*r:]); m != ng {
				t.Errorf("%s: CIDToGIDMap maps %q to %d, cmap to %d", f.key, r, m, ng)
			}
			if got.width(r) != orig.width(r) || got.lsb[ng] != orig.lsb[og] {
				t.Errorf("%s: %q has width %d, lsb %d; want %d, %d", f.key, r, got.width(r), got.lsb[ng], orig.width(r), orig.lsb[og])
			}
			od, nd := orig.glyphData(og), got.glyphData(ng)
			var oc, nc []uint16
			components(od, func(at int) { oc = append(oc, binary.BigEndian.Uint16(od[at:])) })
			components(nd, func(at int) { nc = append(nc, binary.BigEndian.Uint16(nd[at:])) })
			if len(oc) != len(nc) {
				t.Fatalf("%s: %q has %d components, %d in the subset", f.key, r, len(oc), len(nc))
			}
			for i := range oc {
				if !bytes.Equal(orig.glyphData(oc[i]), got.glyphData(nc[i])) {
					t.Errorf("%s: component %d of %q differs in the subset", f.key, i, r)
				}
			}
			if len(oc) > 0 {
				composites++
				continue
			}
			// Simple glyphs are copied as they are, up to the padding.
			if !bytes.Equal(od, nd[:len(od)]) {
				t.Errorf("%s: outline of %q differs in the subset", f.key, r)
			}
		}
		if composites == 0 {
			t.Errorf("%s: no composite glyph among %q", f.key, string(runes))
		}
		// The characters' glyphs, their components and .notdef.
		if n := len(got.advance); n > 2*len(runes)+1 {
			t.Errorf("%s: %d glyphs for %d characters", f.key, n, len(runes))
		}
	}
}

// TestFixedFontSubset: each font's fixed subset, embedded as the same bytes
// in every document whose text it holds, has every letter of Latin-1 and
// Latin Extended-A and every character the layout shows in the samples,
// each with its original outline and width, a CIDToGIDMap and a ToUnicode
// entry; a character outside it gives the document a subset of its own
// that has it.
func TestFixedFontSubset(t *testing.T) {
	t.Parallel()
	fonts, err := libFonts()
	if err != nil {
		t.Fatal(err)
	}
	samples, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fonts {
		e := f.fixed
		for r := rune(0x20); r <= 0x17F; r++ {
			if (r < 0x7F || r >= 0xA0) && !e.holds(map[int]int{int(r): int(r)}) {
				t.Errorf("%s: fixed subset lacks %q (U+%04X)", f.key, r, r)
			}
		}
		for _, r := range "ßéłŁŻőœ–—„“”‚‘’•…€§·" {
			if !e.holds(map[int]int{int(r): int(r)}) {
				t.Errorf("%s: fixed subset lacks %q", f.key, r)
			}
		}
		prog := inflate(t, e.program)
		if len(prog) != e.length1 {
			t.Errorf("%s: program is %d bytes, /Length1 says %d", f.key, len(prog), e.length1)
		}
		got, err := parseTTF(prog)
		if err != nil {
			t.Fatalf("%s: fixed subset does not parse: %v", f.key, err)
		}
		cidToGID := inflate(t, e.cidToGID)
		toUnicode := string(inflate(t, e.toUnicode))
		for _, r := range fixedRunes(f.prog) {
			og, ng := f.prog.glyph[r], got.glyph[r]
			if og == 0 || ng == 0 {
				t.Fatalf("%s: %q has glyph %d, %d in the fixed subset", f.key, r, og, ng)
			}
			if m := binary.BigEndian.Uint16(cidToGID[2*r:]); m != ng {
				t.Errorf("%s: CIDToGIDMap maps %q to %d, cmap to %d", f.key, r, m, ng)
			}
			if got.width(r) != f.prog.width(r) {
				t.Errorf("%s: %q has width %d, want %d", f.key, r, got.width(r), f.prog.width(r))
			}
			if !strings.Contains(toUnicode, fmt.Sprintf("<%04X> <%04X>\n", r, r)) {
				t.Errorf("%s: ToUnicode lacks %q", f.key, r)
			}
			od, nd := f.prog.glyphData(og), got.glyphData(ng)
			var oc []uint16
			components(od, func(at int) { oc = append(oc, 0) })
			if len(oc) == 0 && !bytes.Equal(od, nd[:len(od)]) {
				t.Errorf("%s: outline of %q differs in the fixed subset", f.key, r)
			}
		}
	}

	// Every character the layout shows in the samples (labels, amounts,
	// dashes, the euro sign) is in the fixed subsets.
	for _, s := range samples {
		for _, d := range s.Documents {
			v, err := readView(d.XML, false)
			if err != nil {
				t.Fatal(err)
			}
			_, used, err := layout(v)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range used {
				if len(u.runes) > 0 && !u.font.fixed.holds(u.runes) {
					var out []rune
					for r := range u.runes {
						if !u.font.fixed.holds(map[int]int{r: r}) {
							out = append(out, rune(r))
						}
					}
					t.Errorf("%s: %s shows %q, outside the fixed subset", d.Invoice.Number, u.font.key, string(out))
				}
			}
		}
	}

	// A character outside: the document's own subset has it.
	e := fonts[0].fixed
	if e.holds(map[int]int{'Ω': 'Ω'}) {
		t.Fatal("Ω is in the fixed subset; pick another character")
	}
	runes := []rune("AΩ")
	own := newEmbeddedFont(fonts[0].prog, runes, compressBest)
	if !own.holds(map[int]int{'A': 'A', 'Ω': 'Ω'}) || own.name == e.name {
		t.Errorf("own subset %s holds A and Ω: %v", own.name, own.holds(map[int]int{'A': 'A', 'Ω': 'Ω'}))
	}
}

func inflate(t *testing.T, b []byte) []byte {
	t.Helper()
	r, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
