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
		composites, hinted := 0, 0
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
				if !sameOutline(orig.glyphData(oc[i]), got.glyphData(nc[i])) {
					t.Errorf("%s: component %d of %q differs in the subset", f.key, i, r)
				}
			}
			componentFlags(nd, func(at int) {
				if binary.BigEndian.Uint16(nd[at:])&haveInstructions != 0 {
					t.Errorf("%s: a component of %q keeps instructions", f.key, r)
				}
			})
			if len(oc) > 0 {
				composites++
				continue
			}
			// Simple glyphs are copied without their instructions, up to
			// the padding.
			if !sameOutline(od, nd) {
				t.Errorf("%s: outline of %q differs in the subset", f.key, r)
			}
			if len(od) == 0 {
				continue // space
			}
			if _, ins, _ := splitSimple(od); len(ins) > 0 {
				hinted++
			}
		}
		if composites == 0 {
			t.Errorf("%s: no composite glyph among %q", f.key, string(runes))
		}
		if hinted == 0 {
			t.Errorf("%s: no glyph among %q has instructions to leave out", f.key, string(runes))
		}
		for _, table := range []string{"cvt ", "fpgm", "prep"} {
			if got.tables[table] != nil {
				t.Errorf("%s: the subset has the hinting table %q", f.key, table)
			}
		}
		if got.tables["name"] == nil {
			t.Errorf("%s: the subset lacks the name table (copyright, licence)", f.key)
		}
		// The characters' glyphs, their components and .notdef.
		if n := len(got.advance); n > 2*len(runes)+1 {
			t.Errorf("%s: %d glyphs for %d characters", f.key, n, len(runes))
		}
	}
}

// TestFixedFontSubset: the fixed subsets, embedded as the same bytes in
// every document whose characters they hold, together have every letter of
// Latin-1 and Latin Extended-A; a German text needs only the base, é the
// Latin-1 tier, ł the Latin Extended-A tier. Each has every character of its
// tiers with its original outline and width, a CIDToGIDMap and a ToUnicode
// entry; every character the layout shows in the samples is in them; a
// character outside them gives the document a subset of its own.
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
	set := func(s string) map[int]int {
		m := map[int]int{}
		for _, r := range s {
			m[int(r)] = int(r)
		}
		return m
	}
	for _, f := range fonts {
		for r := rune(0x20); r <= 0x17F; r++ {
			if tiers, ok := fixedTiers(f.prog, set(string(r))); (r < 0x7F || r >= 0xA0) && (!ok || tiers&^(tierLatin1|tierLatinExtA) != 0) {
				t.Errorf("%s: no fixed subset holds %q (U+%04X)", f.key, r, r)
			}
		}
		for text, want := range map[string]int{
			"Rechnung Nr. 1 vom 02.03.2026 – 1.234,56 € · „Groß“ § 33 • …": 0,
			"Hélène Lefèvre":                tierLatin1,
			"Łukasz Żółkiewski":             tierLatin1 | tierLatinExtA, // ó is Latin-1
			"Kőszegi, Cœur, Ștefan, Wałęsa": tierLatinExtA,
		} {
			if tiers, ok := fixedTiers(f.prog, set(text)); !ok || tiers != want {
				t.Errorf("%s: %q takes the fixed subset of tiers %d (%v), want %d", f.key, text, tiers, ok, want)
			}
		}
		if _, ok := fixedTiers(f.prog, set("AΩ")); ok {
			t.Errorf("%s: a fixed subset holds Ω", f.key)
		}
		names := map[string]bool{}
		for tiers := range f.fixed {
			e := f.fixed[tiers]()
			if e != f.fixed[tiers]() {
				t.Errorf("%s: fixed subset %d is built twice", f.key, tiers)
			}
			names[e.name] = true
			prog := inflate(t, e.program)
			if len(prog) != e.length1 {
				t.Errorf("%s: program is %d bytes, /Length1 says %d", f.key, len(prog), e.length1)
			}
			got, err := parseTTF(prog)
			if err != nil {
				t.Fatalf("%s: fixed subset %d does not parse: %v", f.key, tiers, err)
			}
			cidToGID := inflate(t, e.cidToGID)
			toUnicode := string(inflate(t, e.toUnicode))
			runes := fixedRunes(f.prog, tiers)
			for _, r := range runes {
				og, ng := f.prog.glyph[r], got.glyph[r]
				if og == 0 || ng == 0 {
					t.Fatalf("%s: %q has glyph %d, %d in fixed subset %d", f.key, r, og, ng, tiers)
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
				simple := true
				components(od, func(int) { simple = false })
				if simple && !sameOutline(od, nd) {
					t.Errorf("%s: outline of %q differs in fixed subset %d", f.key, r, tiers)
				}
			}
			if n := len(got.advance); n > 2*len(runes)+1 {
				t.Errorf("%s: %d glyphs for %d characters", f.key, n, len(runes))
			}
		}
		if len(names) != fixedSubsets {
			t.Errorf("%s: the fixed subsets have %d distinct names, want %d", f.key, len(names), fixedSubsets)
		}
	}

	// Every character the layout shows in the samples (labels, amounts,
	// dashes, the euro sign) is in a fixed subset.
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
				if _, ok := fixedTiers(u.font.prog, u.runes); !ok {
					var out []rune
					for r := range u.runes {
						if _, ok := fixedTiers(u.font.prog, map[int]int{r: r}); !ok {
							out = append(out, rune(r))
						}
					}
					t.Errorf("%s: %s shows %q, outside the fixed subsets", d.Invoice.Number, u.font.key, string(out))
				}
			}
		}
	}
}

// splitSimple splits a simple glyph as TrueType lays it out: a 10-byte
// header and the contours' end points (head), the instructions with their
// length in front (ins, without the length), the flags and coordinates
// (rest).
func splitSimple(g []byte) (head, ins, rest []byte) {
	at := compositeHeader + 2*int(int16(binary.BigEndian.Uint16(g)))
	n := int(binary.BigEndian.Uint16(g[at:]))
	return g[:at], g[at+2 : at+2+n], g[at+2+n:]
}

// sameOutline reports whether subset glyph nd is original glyph od without
// its instructions, up to nd's padding to four bytes.
func sameOutline(od, nd []byte) bool {
	if len(od) == 0 {
		return len(nd) == 0
	}
	head, _, rest := splitSimple(od)
	want := slices.Concat(head, []byte{0, 0}, rest)
	return len(nd) >= len(want) && len(nd) < len(want)+4 && bytes.Equal(want, nd[:len(want)]) &&
		!slices.ContainsFunc(nd[len(want):], func(b byte) bool { return b != 0 })
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

// TestAppendOutline: a glyph loses its hinting instructions and nothing
// else; one it cannot read is kept as it is.
func TestAppendOutline(t *testing.T) {
	t.Parallel()
	header := func(contours int16) []byte {
		return []byte{byte(uint16(contours) >> 8), byte(contours), 0, 1, 0, 2, 0, 3, 0, 4} // bounding box 1..4
	}
	simple := slices.Concat(header(1), []byte{0, 2}, []byte{0, 3, 0xB0, 0x01, 0x2C}, []byte{1, 1, 1, 5, 6, 7, 8, 9, 10})
	composite := slices.Concat(header(-1),
		[]byte{0x00, 0x20 | 0x0001, 0, 7, 0, 1, 0, 2}, // more components, word arguments, glyph 7
		[]byte{0x01, 0x00, 0, 9, 3, 4},                // has instructions, byte arguments, glyph 9
		[]byte{0, 2, 0xB0, 0x01})
	for _, c := range []struct {
		name string
		in   []byte
		want []byte
	}{
		{"simple with instructions", simple, slices.Concat(header(1), []byte{0, 2}, []byte{0, 0}, []byte{1, 1, 1, 5, 6, 7, 8, 9, 10})},
		{"simple without instructions", slices.Concat(header(1), []byte{0, 2, 0, 0, 1, 1, 1}), slices.Concat(header(1), []byte{0, 2, 0, 0, 1, 1, 1})},
		{"composite with instructions", composite, slices.Concat(header(-1), []byte{0x00, 0x21, 0, 7, 0, 1, 0, 2}, []byte{0x00, 0x00, 0, 9, 3, 4})},
		{"empty (space)", nil, nil},
		{"instructions cut off", simple[:14], simple[:14]},
		{"last component cut off", composite[:20], composite[:20]},
	} {
		prefix := []byte{0xEE}
		got := appendOutline(slices.Clone(prefix), c.in)
		if !bytes.Equal(got, slices.Concat(prefix, c.want)) {
			t.Errorf("%s: % x, want % x", c.name, got[1:], c.want)
		}
	}
}
