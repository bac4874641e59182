package render

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// The font programs embedded into the PDFs. The layout library would parse
// each TrueType file again for every document and write the subset itself;
// here each font is read once (ttf) and a document gets a subset with the
// glyphs of the characters it shows (subset), written in a few microseconds.

// ttf is a TrueType font read once and shared, read-only, by all documents.
type ttf struct {
	psName     string            // PostScript name, the BaseFont without subset tag
	tables     map[string][]byte // the tables a subset copies or rewrites
	glyf       []byte
	loca       []uint32 // numGlyphs+1 offsets into glyf
	advance    []uint16 // advance width per glyph
	lsb        []int16  // left side bearing per glyph
	unitsPerEm int
	glyph      []uint16 // glyph index per BMP code point, 0 if none
}

// copiedTables are written into a subset unchanged if the font has them;
// head, hhea, maxp, post, cmap, hmtx, loca and glyf are rewritten. The
// layout tables (GPOS, GSUB, kern) are left out: the PDF positions every
// glyph itself. So is the hinting (the cvt, fpgm and prep tables and each
// glyph's instructions): it fits outlines to a screen's pixel grid, and was
// more than half of a subset's bytes (docs/performance.md). The name table
// stays: it carries the font's copyright and licence.
var copiedTables = []string{"OS/2", "gasp", "name"}

// parseTTF reads the tables of a TrueType font that a subset needs.
func parseTTF(data []byte) (*ttf, error) {
	if len(data) < 12 || binary.BigEndian.Uint32(data) != 0x00010000 {
		return nil, errors.New("not a TrueType font")
	}
	n := int(binary.BigEndian.Uint16(data[4:]))
	if len(data) < 12+16*n {
		return nil, errors.New("truncated table directory")
	}
	f := &ttf{tables: map[string][]byte{}}
	for i := range n {
		rec := data[12+16*i:]
		off, length := binary.BigEndian.Uint32(rec[8:]), binary.BigEndian.Uint32(rec[12:])
		if uint64(off)+uint64(length) > uint64(len(data)) {
			return nil, fmt.Errorf("table %q out of bounds", rec[:4])
		}
		f.tables[string(rec[:4])] = data[off : off+length]
	}
	for _, t := range []string{"head", "hhea", "maxp", "hmtx", "loca", "glyf", "cmap", "post", "name"} {
		if f.tables[t] == nil {
			return nil, fmt.Errorf("no %q table", t)
		}
	}
	head, hhea, maxp := f.tables["head"], f.tables["hhea"], f.tables["maxp"]
	if len(head) < 54 || len(hhea) < 36 || len(maxp) < 6 || len(f.tables["post"]) < 16 {
		return nil, errors.New("short head, hhea, maxp or post table")
	}
	f.unitsPerEm = int(binary.BigEndian.Uint16(head[18:]))
	longLoca := binary.BigEndian.Uint16(head[50:]) == 1
	numGlyphs := int(binary.BigEndian.Uint16(maxp[4:]))
	numHMetrics := int(binary.BigEndian.Uint16(hhea[34:]))
	f.glyf = f.tables["glyf"]

	loca := f.tables["loca"]
	f.loca = make([]uint32, numGlyphs+1)
	for i := range f.loca {
		switch {
		case longLoca && len(loca) >= 4*(i+1):
			f.loca[i] = binary.BigEndian.Uint32(loca[4*i:])
		case !longLoca && len(loca) >= 2*(i+1):
			f.loca[i] = 2 * uint32(binary.BigEndian.Uint16(loca[2*i:]))
		default:
			return nil, errors.New("short loca table")
		}
		if f.loca[i] > uint32(len(f.glyf)) || i > 0 && f.loca[i] < f.loca[i-1] {
			return nil, errors.New("bad loca table")
		}
	}

	hmtx := f.tables["hmtx"]
	if numHMetrics < 1 || numHMetrics > numGlyphs || len(hmtx) < 4*numHMetrics+2*(numGlyphs-numHMetrics) {
		return nil, errors.New("short hmtx table")
	}
	f.advance = make([]uint16, numGlyphs)
	f.lsb = make([]int16, numGlyphs)
	for g := range numGlyphs {
		if g < numHMetrics {
			f.advance[g] = binary.BigEndian.Uint16(hmtx[4*g:])
			f.lsb[g] = int16(binary.BigEndian.Uint16(hmtx[4*g+2:]))
		} else {
			f.advance[g] = f.advance[numHMetrics-1]
			f.lsb[g] = int16(binary.BigEndian.Uint16(hmtx[4*numHMetrics+2*(g-numHMetrics):]))
		}
	}

	var err error
	if f.glyph, err = readCmap(f.tables["cmap"], numGlyphs); err != nil {
		return nil, err
	}
	if f.psName, err = postScriptName(f.tables["name"]); err != nil {
		return nil, err
	}
	return f, nil
}

// readCmap reads the Unicode BMP subtable (format 4) into a table from
// code point to glyph index.
func readCmap(cmap []byte, numGlyphs int) ([]uint16, error) {
	if len(cmap) < 4 {
		return nil, errors.New("short cmap table")
	}
	var sub []byte
	for i := range int(binary.BigEndian.Uint16(cmap[2:])) {
		if len(cmap) < 12+8*i {
			return nil, errors.New("short cmap table")
		}
		rec := cmap[4+8*i:]
		platform, encoding := binary.BigEndian.Uint16(rec), binary.BigEndian.Uint16(rec[2:])
		off := binary.BigEndian.Uint32(rec[4:])
		if (platform == 3 && encoding == 1 || platform == 0 && encoding == 3) && int(off)+14 <= len(cmap) &&
			binary.BigEndian.Uint16(cmap[off:]) == 4 {
			sub = cmap[off:]
			break
		}
	}
	if sub == nil {
		return nil, errors.New("no Unicode BMP cmap (format 4)")
	}
	segs := int(binary.BigEndian.Uint16(sub[6:])) / 2
	if len(sub) < 16+8*segs {
		return nil, errors.New("short cmap subtable")
	}
	ends, starts := sub[14:], sub[16+2*segs:]
	deltas, rangeOffs := sub[16+4*segs:], sub[16+6*segs:]
	glyph := make([]uint16, 1<<16)
	for s := range segs {
		end, start := int(binary.BigEndian.Uint16(ends[2*s:])), int(binary.BigEndian.Uint16(starts[2*s:]))
		delta, rangeOff := binary.BigEndian.Uint16(deltas[2*s:]), int(binary.BigEndian.Uint16(rangeOffs[2*s:]))
		for c := start; c <= end && c < 0xFFFF; c++ {
			g := uint16(c) + delta
			if rangeOff != 0 {
				// idRangeOffset counts from its own position in the subtable.
				at := 16 + 6*segs + 2*s + rangeOff + 2*(c-start)
				if at+2 > len(sub) {
					return nil, errors.New("bad cmap subtable")
				}
				if g = binary.BigEndian.Uint16(sub[at:]); g != 0 {
					g += delta
				}
			}
			if int(g) < numGlyphs {
				glyph[c] = g
			}
		}
	}
	return glyph, nil
}

// postScriptName returns name ID 6 (Windows Unicode or Macintosh Roman).
func postScriptName(name []byte) (string, error) {
	if len(name) >= 6 {
		count, strs := int(binary.BigEndian.Uint16(name[2:])), int(binary.BigEndian.Uint16(name[4:]))
		for i := range count {
			if len(name) < 6+12*(i+1) {
				break
			}
			rec := name[6+12*i:]
			platform, id := binary.BigEndian.Uint16(rec), binary.BigEndian.Uint16(rec[6:])
			length, off := int(binary.BigEndian.Uint16(rec[8:])), int(binary.BigEndian.Uint16(rec[10:]))
			if id != 6 || strs+off+length > len(name) {
				continue
			}
			s := name[strs+off : strs+off+length]
			switch platform {
			case 1:
				return string(s), nil
			case 3:
				b := make([]byte, 0, length/2)
				for j := 0; j+1 < length; j += 2 {
					b = append(b, s[j+1]) // PostScript names are ASCII
				}
				return string(b), nil
			}
		}
	}
	return "", errors.New("no PostScript name")
}

// width is the advance of c's glyph in thousandths of the em, rounded as
// the layout library rounds it (0 if the font has no glyph for c).
func (f *ttf) width(c rune) int {
	if c < 0 || int(c) >= len(f.glyph) || f.glyph[c] == 0 {
		return 0
	}
	return int(math.Round(1000 / float64(f.unitsPerEm) * float64(f.advance[f.glyph[c]])))
}

// The fixed subsets: a document whose characters a font's fixed subset
// holds embeds it as the same bytes, compressed once per process. Each font
// has four, by the tiers of characters they hold:
//
//   - always the base: ASCII, the Latin-1 characters of German texts and
//     the typographic marks of the layout and the XML's texts (dashes,
//     quotes, bullet, ellipsis, euro sign);
//   - with the rest of Latin-1 (é, ñ, ø, Þ: tier 1), with Latin Extended-A
//     and the Romanian letters with comma below (ł, Ł, Ż, ő, œ: tier 2), or
//     with both.
//
// Each is a superset of every document that uses it, so no glyph is lost,
// and a German invoice embeds no glyphs it could never show. A document
// showing any other character (Greek, Cyrillic, CJK) gets a subset of its
// own (pdfWriter.font).
const (
	tierLatin1     = 1 << iota // the rest of Latin-1
	tierLatinExtA              // Latin Extended-A, Ș ș Ț ț
	fixedSubsets   = 4         // base; base+1; base+2; base+1+2
	baseExtraChars = "\u00a0§°±²³µ·×÷«»©®¼½¾ÄÖÜäöüß‐‑‒–—―‘’‚“”„†‡•…‰‹›€™−"
)

var baseExtra = func() map[rune]bool {
	m := map[rune]bool{}
	for _, r := range baseExtraChars {
		m[r] = true
	}
	return m
}()

// fixedTier returns the tier of r (0 for the base) and whether a fixed
// subset holds r at all.
func fixedTier(r rune) (int, bool) {
	switch {
	case r >= 0x20 && r <= 0x7E || baseExtra[r]:
		return 0, true
	case r >= 0xA0 && r <= 0xFF:
		return tierLatin1, true
	case r >= 0x100 && r <= 0x17F || r >= 0x218 && r <= 0x21B:
		return tierLatinExtA, true
	}
	return 0, false
}

// fixedRunes are the characters of f's fixed subset of tiers, those f has
// a glyph for, ascending.
func fixedRunes(f *ttf, tiers int) []rune {
	var runes []rune
	for r := rune(0x20); r < 0x2200; r++ {
		if t, ok := fixedTier(r); ok && t&^tiers == 0 && f.glyph[r] != 0 {
			runes = append(runes, r)
		}
	}
	return runes
}

// fixedTiers returns the tiers of the fixed subset that holds every
// character of used, or false if none does.
func fixedTiers(f *ttf, used map[int]int) (int, bool) {
	tiers := 0
	for r := range used {
		t, ok := fixedTier(rune(r))
		if !ok || r <= 0 || r >= len(f.glyph) || f.glyph[r] == 0 {
			return 0, false
		}
		tiers |= t
	}
	return tiers, true
}

// Composite glyph flags (TrueType glyf table).
const (
	argsAreWords     = 0x0001
	haveScale        = 0x0008
	moreComponents   = 0x0020
	haveXYScale      = 0x0040
	haveTwoByTwo     = 0x0080
	haveInstructions = 0x0100
	compositeHeader  = 10
)

// components calls fn with the offset (within the glyph) of each component
// glyph index of a composite glyph; it does nothing for a simple glyph.
func components(g []byte, fn func(at int)) {
	componentFlags(g, func(at int) { fn(at + 2) })
}

// componentFlags calls fn with the offset of each component's flags in a
// composite glyph and returns the offset right after the last component
// (where the glyph's instructions, if any, begin); it returns 0 for a
// simple glyph, and for a composite one whose last component is cut off.
func componentFlags(g []byte, fn func(at int)) (end int) {
	if len(g) < compositeHeader || int16(binary.BigEndian.Uint16(g)) >= 0 {
		return 0
	}
	for at := compositeHeader; at+4 <= len(g); {
		flags := binary.BigEndian.Uint16(g[at:])
		fn(at)
		at += 4
		if flags&argsAreWords != 0 {
			at += 4
		} else {
			at += 2
		}
		switch {
		case flags&haveScale != 0:
			at += 2
		case flags&haveXYScale != 0:
			at += 4
		case flags&haveTwoByTwo != 0:
			at += 8
		}
		if flags&moreComponents == 0 {
			if at > len(g) {
				return 0
			}
			return at
		}
	}
	return 0
}

// appendOutline appends glyph g to dst without its hinting instructions:
// a simple glyph keeps its contours, flags and coordinates with an
// instruction length of 0; a composite glyph ends after its last component,
// none of which says it has instructions. A glyph it cannot read is
// appended as it is.
func appendOutline(dst, g []byte) []byte {
	be := binary.BigEndian
	if len(g) < compositeHeader {
		return append(dst, g...) // an empty glyph (space)
	}
	if contours := int16(be.Uint16(g)); contours >= 0 {
		at := compositeHeader + 2*int(contours) // the instruction length
		if len(g) < at+2 || len(g) < at+2+int(be.Uint16(g[at:])) {
			return append(dst, g...)
		}
		rest := g[at+2+int(be.Uint16(g[at:])):]
		dst = append(append(dst, g[:at]...), 0, 0)
		return append(dst, rest...)
	}
	start := len(dst)
	end := componentFlags(g, func(int) {})
	if end == 0 {
		return append(dst, g...)
	}
	dst = append(dst, g[:end]...)
	componentFlags(dst[start:], func(at int) {
		at += start
		be.PutUint16(dst[at:], be.Uint16(dst[at:])&^haveInstructions)
	})
	return dst
}

func (f *ttf) glyphData(g uint16) []byte { return f.glyf[f.loca[g]:f.loca[g+1]] }

// fontSubset is what a document embeds of one font.
type fontSubset struct {
	program  []byte // the TrueType subset (FontFile2)
	cidToGID []byte // CIDToGIDMap: 2 bytes per CID (= code point) up to the last rune
}

// subset returns a font program with .notdef, the glyphs of runes and the
// components of those glyphs, numbered in that order. runes must be
// ascending BMP code points.
func (f *ttf) subset(runes []rune) fontSubset {
	var s fontSubset
	newGID := make(map[uint16]uint16, len(runes)+8)
	order := []uint16{0}
	newGID[0] = 0
	add := func(g uint16) {
		if _, ok := newGID[g]; !ok && int(g) < len(f.advance) {
			newGID[g] = uint16(len(order))
			order = append(order, g)
		}
	}
	for _, r := range runes {
		add(f.glyph[r])
	}
	for i := 0; i < len(order); i++ { // order grows with the components
		g := f.glyphData(order[i])
		components(g, func(at int) { add(binary.BigEndian.Uint16(g[at:])) })
	}

	if len(runes) > 0 {
		s.cidToGID = make([]byte, 2*(int(runes[len(runes)-1])+1))
		for _, r := range runes {
			binary.BigEndian.PutUint16(s.cidToGID[2*r:], newGID[f.glyph[r]])
		}
	}

	size := 0
	for _, g := range order {
		size += (len(f.glyphData(g)) + 3) &^ 3
	}
	glyf := make([]byte, 0, size)
	loca := make([]byte, 4*(len(order)+1))
	hmtx := make([]byte, 4*len(order))
	for i, g := range order {
		binary.BigEndian.PutUint32(loca[4*i:], uint32(len(glyf)))
		binary.BigEndian.PutUint16(hmtx[4*i:], f.advance[g])
		binary.BigEndian.PutUint16(hmtx[4*i+2:], uint16(f.lsb[g]))
		start := len(glyf)
		glyf = appendOutline(glyf, f.glyphData(g))
		ng := glyf[start:]
		components(ng, func(at int) {
			binary.BigEndian.PutUint16(ng[at:], newGID[binary.BigEndian.Uint16(ng[at:])])
		})
		for len(glyf)%4 != 0 {
			glyf = append(glyf, 0)
		}
	}
	binary.BigEndian.PutUint32(loca[4*len(order):], uint32(len(glyf)))

	n := uint16(len(order))
	head := slices.Clone(f.tables["head"])
	binary.BigEndian.PutUint32(head[8:], 0)  // checkSumAdjustment, set below
	binary.BigEndian.PutUint16(head[50:], 1) // long loca offsets
	hhea := slices.Clone(f.tables["hhea"])
	binary.BigEndian.PutUint16(hhea[34:], n)
	maxp := slices.Clone(f.tables["maxp"])
	binary.BigEndian.PutUint16(maxp[4:], n)
	if len(maxp) >= 32 {
		// Version 1.0: without hinting, one zone and no twilight points,
		// storage, functions, instructions or stack.
		binary.BigEndian.PutUint16(maxp[14:], 1)
		clear(maxp[16:28])
	}
	// post version 3: no glyph names.
	post := make([]byte, 32)
	copy(post, f.tables["post"][:16])
	binary.BigEndian.PutUint32(post, 0x00030000)

	tables := map[string][]byte{
		"cmap": cmapFormat4(runes, func(r rune) uint16 { return newGID[f.glyph[r]] }),
		"glyf": glyf, "head": head, "hhea": hhea, "hmtx": hmtx, "loca": loca, "maxp": maxp, "post": post,
	}
	for _, t := range copiedTables {
		if data, ok := f.tables[t]; ok {
			tables[t] = data
		}
	}
	s.program = writeSFNT(tables)
	return s
}

// cmapFormat4 maps runes (ascending, BMP) to their glyphs in the subset.
func cmapFormat4(runes []rune, gid func(rune) uint16) []byte {
	type segment struct{ start, end, delta uint16 }
	var segs []segment
	for _, r := range runes {
		g := gid(r)
		if g == 0 || r >= 0xFFFF {
			continue
		}
		delta := g - uint16(r)
		if k := len(segs) - 1; k >= 0 && segs[k].end+1 == uint16(r) && segs[k].delta == delta {
			segs[k].end++
			continue
		}
		segs = append(segs, segment{uint16(r), uint16(r), delta})
	}
	segs = append(segs, segment{0xFFFF, 0xFFFF, 1})
	n := len(segs)
	sub := make([]byte, 16+8*n)
	be := binary.BigEndian
	be.PutUint16(sub, 4)
	be.PutUint16(sub[2:], uint16(len(sub)))
	be.PutUint16(sub[6:], uint16(2*n))
	searchRange, selector := 2, 0
	for searchRange*2 <= 2*n {
		searchRange *= 2
		selector++
	}
	be.PutUint16(sub[8:], uint16(searchRange))
	be.PutUint16(sub[10:], uint16(selector))
	be.PutUint16(sub[12:], uint16(2*n-searchRange))
	for i, s := range segs {
		be.PutUint16(sub[14+2*i:], s.end)
		be.PutUint16(sub[16+2*n+2*i:], s.start)
		be.PutUint16(sub[16+4*n+2*i:], s.delta)
		// idRangeOffset stays 0
	}
	out := make([]byte, 12, 12+len(sub))
	be.PutUint16(out[2:], 1) // one subtable: Windows, Unicode BMP
	be.PutUint16(out[4:], 3)
	be.PutUint16(out[6:], 1)
	be.PutUint32(out[8:], 12)
	return append(out, sub...)
}

// writeSFNT writes a TrueType file of tables, with checksums and the head
// table's checkSumAdjustment.
func writeSFNT(tables map[string][]byte) []byte {
	tags := make([]string, 0, len(tables))
	size := 12 + 16*len(tables)
	for t, data := range tables {
		tags = append(tags, t)
		size += (len(data) + 3) &^ 3
	}
	slices.Sort(tags)
	be := binary.BigEndian
	out := make([]byte, 12+16*len(tags), size)
	be.PutUint32(out, 0x00010000)
	be.PutUint16(out[4:], uint16(len(tags)))
	searchRange, selector := 1, 0
	for searchRange*2 <= len(tags) {
		searchRange *= 2
		selector++
	}
	be.PutUint16(out[6:], uint16(16*searchRange))
	be.PutUint16(out[8:], uint16(selector))
	be.PutUint16(out[10:], uint16(16*(len(tags)-searchRange)))
	headAt := 0
	for i, t := range tags {
		data := tables[t]
		rec := out[12+16*i:]
		copy(rec, t)
		be.PutUint32(rec[4:], checksum(data))
		be.PutUint32(rec[8:], uint32(len(out)))
		be.PutUint32(rec[12:], uint32(len(data)))
		if t == "head" {
			headAt = len(out)
		}
		out = append(out, data...)
		for len(out)%4 != 0 {
			out = append(out, 0)
		}
	}
	be.PutUint32(out[headAt+8:], 0xB1B0AFBA-checksum(out))
	return out
}

// checksum is the TrueType table checksum: the sum of big-endian uint32s,
// the last one padded with zeros.
func checksum(b []byte) uint32 {
	var sum uint32
	for len(b) >= 4 {
		sum += binary.BigEndian.Uint32(b)
		b = b[4:]
	}
	var last [4]byte
	copy(last[:], b)
	return sum + binary.BigEndian.Uint32(last[:])
}
