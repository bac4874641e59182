package render

import (
	"bytes"
	"encoding/binary"
	"slices"
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
