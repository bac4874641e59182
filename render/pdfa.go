package render

import (
	"bytes"
	"crypto/md5"
	_ "embed"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/klauspost/compress/zlib"
)

// PDF/A-3b with the Factur-X / ZUGFeRD structure. toPDFA3 copies the
// objects of gofpdf's plain PDF (pages, content streams, resources) into a
// new file with the PDF/A header (with its binary comment line) and one
// clean revision, and writes what gofpdf cannot:
//
//   - the fonts: gofpdf wrote a placeholder for each (gofpdf.go); each
//     becomes a Type0 font with Identity-H (the content streams show UTF-16
//     code units, which are the CIDs), a CIDFontType2 with the widths of the
//     characters shown, a CIDToGIDMap, a ToUnicode CMap and the embedded
//     TrueType subset (font.go);
//   - the XML as associated file: an EmbeddedFile stream /Subtype /text#2Fxml
//     with /Params /ModDate, a file specification with /F, /UF and
//     /AFRelationship, listed in the catalog /AF array and in the
//     EmbeddedFiles name tree;
//   - XMP metadata (pdfaid part 3, conformance B, the Factur-X extension
//     schema and its fx: properties, Dublin Core and dates);
//   - an OutputIntent /GTS_PDFA1 with the sRGB ICC profile (assets/);
//   - a document information dictionary equal to the XMP and a trailer /ID
//     (a digest of the XML).
//
// Everything comes from the XML (the dates are its issue date) and objects
// are written in a fixed order, so the same XML gives the same bytes.

// attachmentName is the file name of the embedded XML. The ZUGFeRD 2.x
// specification names the XML of profile XRECHNUNG xrechnung.xml, but the
// project's referee (validate-einvoice, PDF-ATTACHMENT-NAME) warns on any
// name other than factur-x.xml, and a warning fails its --strict mode. So
// both formats embed factur-x.xml; the XMP says which profile it is
// (fx:ConformanceLevel EN 16931 or XRECHNUNG, matching BT-24).
const attachmentName = "factur-x.xml"

//go:embed assets/sRGB.icc
var iccSRGB []byte

// Fixed document properties.
const (
	pdfCreator  = "o2i"
	pdfProducer = "o2i render (maroto v2)"
	iccName     = "sRGB IEC61966-2.1"
)

// iccCompressed is the ICC profile stream's data, compressed once.
var iccCompressed = sync.OnceValue(func() []byte { return compressBest(iccSRGB) })

// compressBest compresses what is compressed once per process.
func compressBest(data []byte) []byte {
	var b bytes.Buffer
	w, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	_, _ = w.Write(data)
	_ = w.Close()
	return b.Bytes()
}

// toPDFA3 turns gofpdf's plain PDF, with the fonts it used, into a
// PDF/A-3b with xmlData embedded.
func toPDFA3(plain []byte, fonts []*fontUse, xmlData []byte, v *view) ([]byte, error) {
	src, err := readPlain(plain)
	if err != nil {
		return nil, err
	}
	meta := newDocMeta(v)
	w := newPDFWriter(src.size)
	defer writers.Put(w)
	w.buf.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")

	placeholder := map[int]*fontUse{}
	for _, f := range fonts {
		placeholder[f.obj] = f
	}
	for _, o := range src.objects {
		switch f := placeholder[o.num]; {
		case o.num == src.root || o.num == src.info:
			// written below
		case f != nil:
			w.font(o.num, f)
			delete(placeholder, o.num)
		default:
			w.copyObject(o)
		}
	}
	if len(placeholder) > 0 {
		return nil, errors.New("a font placeholder is not in the PDF")
	}

	// The XML as associated file (none for a small-amount invoice).
	date := pdfString(meta.pdfDate())
	sum := md5.Sum(xmlData)
	attached := ""
	if xmlData != nil {
		ef := w.stream(fmt.Sprintf("/Type /EmbeddedFile /Subtype /text#2Fxml /Params <</Size %d /CreationDate %s /ModDate %s /CheckSum <%x>>>",
			len(xmlData), date, date, sum), xmlData, true)
		spec := w.object(fmt.Sprintf("<</Type /Filespec /F %s /UF %s /Desc %s /AFRelationship /%s /EF <</F %d 0 R /UF %d 0 R>>>>",
			pdfString(attachmentName), pdfString(attachmentName), pdfString(meta.attachmentDesc()), meta.relationship(), ef, ef))
		attached = fmt.Sprintf(" /AF [%d 0 R] /Names <</EmbeddedFiles <</Names [%s %d 0 R]>>>>", spec, pdfString(attachmentName), spec)
	} else {
		meta.noAttachment = true
	}
	// XMP metadata: uncompressed, as PDF/A requires.
	xmp := w.stream("/Type /Metadata /Subtype /XML", meta.xmp(), false)
	// Output intent with the sRGB profile: maroto paints in DeviceRGB.
	icc := w.streamData("/N 3 /Filter /FlateDecode", iccCompressed())

	w.objectAt(src.root, fmt.Sprintf("<</Type /Catalog /Pages %d 0 R /Metadata %d 0 R /OutputIntents [<</Type /OutputIntent /S /GTS_PDFA1"+
		" /OutputConditionIdentifier %s /Info %s /RegistryName %s /DestOutputProfile %d 0 R>>]"+
		"%s /Lang %s /ViewerPreferences <</DisplayDocTitle true>>>>",
		src.pages, xmp, pdfString(iccName), pdfString(iccName), pdfString("http://www.color.org"), icc,
		attached, pdfString("de-DE")))
	var info strings.Builder
	info.WriteString("<<")
	for _, e := range meta.info() {
		info.WriteString("/" + e[0] + " " + pdfString(e[1]) + " ")
	}
	info.WriteString(">>")
	w.objectAt(src.info, info.String())

	id := strings.ToUpper(hex.EncodeToString(sum[:]))
	w.finish(fmt.Sprintf("/Root %d 0 R /Info %d 0 R /ID [<%s> <%s>]", src.root, src.info, id, id))
	// A copy: the writer's buffer goes back to the pool.
	return bytes.Clone(w.buf.Bytes()), nil
}

// plainPDF is gofpdf's output, split into its objects.
type plainPDF struct {
	objects           []plainObject // in file order
	size              int           // the trailer's /Size
	root, info, pages int           // object numbers
}

type plainObject struct {
	num  int
	body []byte // between "n 0 obj\n" and "endobj"
}

// readPlain splits gofpdf's output (one revision, a classic cross-reference
// table, objects "n 0 obj") into its objects.
func readPlain(pdf []byte) (*plainPDF, error) {
	bad := func(what string) (*plainPDF, error) { return nil, fmt.Errorf("plain PDF: %s", what) }
	i := bytes.LastIndex(pdf, []byte("startxref\n"))
	if i < 0 {
		return bad("no startxref")
	}
	xref, ok := leadingInt(pdf[i+len("startxref\n"):])
	if !ok || xref >= i || !bytes.HasPrefix(pdf[xref:], []byte("xref\n0 ")) {
		return bad("no cross-reference table")
	}
	p := &plainPDF{}
	rest := pdf[xref+len("xref\n0 "):]
	if p.size, ok = leadingInt(rest); !ok || p.size < 2 {
		return bad("bad cross-reference table")
	}
	rest = rest[bytes.IndexByte(rest, '\n')+1:]
	const entry = 20 // "0000000015 00000 n \n"
	if len(rest) < p.size*entry {
		return bad("short cross-reference table")
	}
	trailer := rest[p.size*entry:]
	if p.root, ok = refAfter(trailer, "/Root "); !ok {
		return bad("no /Root")
	}
	if p.info, ok = refAfter(trailer, "/Info "); !ok {
		return bad("no /Info")
	}
	offsets := make([][2]int, 0, p.size) // offset, number
	for n := 1; n < p.size; n++ {
		off, ok := leadingInt(rest[n*entry:])
		if !ok || off >= xref || rest[n*entry+17] != 'n' {
			return bad("bad cross-reference entry")
		}
		offsets = append(offsets, [2]int{off, n})
	}
	slices.SortFunc(offsets, func(a, b [2]int) int { return a[0] - b[0] })
	for k, o := range offsets {
		end := xref
		if k+1 < len(offsets) {
			end = offsets[k+1][0]
		}
		head := strconv.Itoa(o[1]) + " 0 obj\n"
		body, ok := bytes.CutPrefix(pdf[o[0]:end], []byte(head))
		if !ok {
			return bad("object " + strconv.Itoa(o[1]) + " is not where the table says")
		}
		if body, ok = bytes.CutSuffix(body, []byte("endobj\n")); !ok {
			return bad("object " + strconv.Itoa(o[1]) + " does not end with endobj")
		}
		p.objects = append(p.objects, plainObject{o[1], body})
		if o[1] == p.root {
			if p.pages, ok = refAfter(body, "/Pages "); !ok {
				return bad("no /Pages in the catalog")
			}
		}
	}
	return p, nil
}

// leadingInt parses the decimal number at the start of b.
func leadingInt(b []byte) (int, bool) {
	n, i := 0, 0
	for ; i < len(b) && i < 12 && b[i] >= '0' && b[i] <= '9'; i++ {
		n = 10*n + int(b[i]-'0')
	}
	return n, i > 0
}

// refAfter returns the object number of the reference after key in b.
func refAfter(b []byte, key string) (int, bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, false
	}
	return leadingInt(b[i+len(key):])
}

// pdfWriter writes a PDF file object by object.
type pdfWriter struct {
	buf     bytes.Buffer
	offsets []int // by object number; 0 = not written
	next    int   // the next free object number
	z       bytes.Buffer
}

func (w *pdfWriter) begin(num int) {
	for len(w.offsets) <= num {
		w.offsets = append(w.offsets, 0)
	}
	w.offsets[num] = w.buf.Len()
	w.buf.WriteString(strconv.Itoa(num))
	w.buf.WriteString(" 0 obj\n")
}

// objectAt writes object num.
func (w *pdfWriter) objectAt(num int, body string) {
	w.begin(num)
	w.buf.WriteString(body)
	w.buf.WriteString("\nendobj\n")
}

// object writes a new object and returns its number.
func (w *pdfWriter) object(body string) int {
	n := w.next
	w.next++
	w.objectAt(n, body)
	return n
}

// stream writes a new stream object with the entries dict (without
// /Length and /Filter) and returns its number.
func (w *pdfWriter) stream(dict string, data []byte, compress bool) int {
	if compress {
		data = w.deflate(data)
		dict += " /Filter /FlateDecode"
	}
	return w.streamData(dict, data)
}

// streamData writes a new stream object with data as it is.
func (w *pdfWriter) streamData(dict string, data []byte) int {
	n := w.next
	w.next++
	w.streamAt(n, dict, data)
	return n
}

func (w *pdfWriter) streamAt(num int, dict string, data []byte) {
	w.begin(num)
	w.buf.WriteString("<<")
	w.buf.WriteString(dict)
	w.buf.WriteString(" /Length ")
	w.buf.WriteString(strconv.Itoa(len(data)))
	w.buf.WriteString(">>\nstream\n")
	w.buf.Write(data)
	w.buf.WriteString("\nendstream\nendobj\n")
}

// writers are reused: a PDF's buffer grows to about 100 KB.
var writers = sync.Pool{New: func() any { return &pdfWriter{} }}

// newPDFWriter returns an empty writer whose first new object is next.
func newPDFWriter(next int) *pdfWriter {
	w := writers.Get().(*pdfWriter)
	w.buf.Reset()
	w.offsets = w.offsets[:0]
	w.next = next
	return w
}

// zlibWriters are reused: a new one allocates about 1 MB.
var zlibWriters = sync.Pool{New: func() any {
	z, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
	return z
}}

// deflate returns data compressed; the result is valid until the next call.
func (w *pdfWriter) deflate(data []byte) []byte {
	w.z.Reset()
	z := zlibWriters.Get().(*zlib.Writer)
	z.Reset(&w.z)
	_, _ = z.Write(data) // a bytes.Buffer does not fail
	_ = z.Close()
	zlibWriters.Put(z)
	return w.z.Bytes()
}

// copyObject copies an object of gofpdf's PDF, compressing the content
// streams: layout turns gofpdf's compression off, which takes a new
// compressor (about 1 MB) for every stream.
func (w *pdfWriter) copyObject(o plainObject) {
	if rest, ok := bytes.CutPrefix(o.body, []byte("<</Length ")); ok {
		n, _ := leadingInt(rest)
		head := "<</Length " + strconv.Itoa(n) + ">>\nstream\n"
		if data, ok := bytes.CutPrefix(o.body, []byte(head)); ok && len(data) == n+len("\nendstream\n") {
			w.streamAt(o.num, "/Filter /FlateDecode", w.deflate(data[:n]))
			return
		}
	}
	w.begin(o.num)
	w.buf.Write(o.body)
	w.buf.WriteString("endobj\n")
}

// finish writes the cross-reference table and the trailer.
func (w *pdfWriter) finish(trailer string) {
	xref := w.buf.Len()
	w.buf.WriteString("xref\n0 ")
	w.buf.WriteString(strconv.Itoa(len(w.offsets)))
	w.buf.WriteString("\n0000000000 65535 f \n")
	for _, off := range w.offsets[1:] {
		fmt.Fprintf(&w.buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&w.buf, "trailer\n<</Size %d %s>>\nstartxref\n%d\n%%%%EOF\n", len(w.offsets), trailer, xref)
}

// font writes the font of a placeholder as a Type0 font (object num) with
// its descendant font, descriptor, subset, CIDToGIDMap and ToUnicode CMap:
// the font's fixed subset that holds every character shown (font.go), else
// a subset of the characters shown.
func (w *pdfWriter) font(num int, u *fontUse) {
	f := u.font
	if tiers, ok := fixedTiers(f.prog, u.runes); ok {
		w.writeFont(num, f, f.fixed[tiers]())
		return
	}
	runes := make([]rune, 0, len(u.runes))
	for r := range u.runes {
		// Only BMP characters are CIDs of their own (gofpdf writes UTF-16).
		if r > 0 && r < 0xFFFF {
			runes = append(runes, rune(r))
		}
	}
	slices.Sort(runes)
	w.writeFont(num, f, newEmbeddedFont(f.prog, runes, func(b []byte) []byte { return bytes.Clone(w.deflate(b)) }))
}

// embeddedFont is what a document embeds of a font: the streams
// compressed, the rest as PDF syntax.
type embeddedFont struct {
	name      string // the BaseFont, with its subset tag
	program   []byte // FontFile2, compressed
	length1   int    // the program's length uncompressed
	cidToGID  []byte // compressed; nil for /Identity
	toUnicode []byte // compressed
	widths    string // the /W array's content
}

// newEmbeddedFont subsets f to runes (ascending BMP code points) and
// compresses the streams with compress.
func newEmbeddedFont(f *ttf, runes []rune, compress func([]byte) []byte) *embeddedFont {
	sub := f.subset(runes)
	e := &embeddedFont{
		name:      subsetTag(runes) + "+" + f.psName,
		program:   compress(sub.program),
		length1:   len(sub.program),
		toUnicode: compress(toUnicodeCMap(runes)),
		widths:    widths(f, runes),
	}
	if sub.cidToGID != nil {
		e.cidToGID = compress(sub.cidToGID)
	}
	return e
}

// writeFont writes e as the Type0 font num and its descendant objects.
func (w *pdfWriter) writeFont(num int, f *libFont, e *embeddedFont) {
	prog := w.streamData("/Length1 "+strconv.Itoa(e.length1)+" /Filter /FlateDecode", e.program)
	cidToGID := "/Identity"
	if e.cidToGID != nil {
		cidToGID = strconv.Itoa(w.streamData(" /Filter /FlateDecode", e.cidToGID)) + " 0 R"
	}
	toUnicode := w.streamData(" /Filter /FlateDecode", e.toUnicode)
	d := &f.desc
	// Flags: symbolic (4), not nonsymbolic (32), as for any CID font.
	desc := w.object(fmt.Sprintf("<</Type /FontDescriptor /FontName /%s /Flags %d /FontBBox [%d %d %d %d] /ItalicAngle %d"+
		" /Ascent %d /Descent %d /CapHeight %d /StemV %d /MissingWidth %d /FontFile2 %d 0 R>>",
		e.name, (d.Flags|4)&^32, d.FontBBox.Xmin, d.FontBBox.Ymin, d.FontBBox.Xmax, d.FontBBox.Ymax, d.ItalicAngle,
		d.Ascent, d.Descent, d.CapHeight, d.StemV, d.MissingWidth, prog))
	cid := w.object(fmt.Sprintf("<</Type /Font /Subtype /CIDFontType2 /BaseFont /%s"+
		" /CIDSystemInfo <</Registry (Adobe) /Ordering (Identity) /Supplement 0>> /FontDescriptor %d 0 R"+
		" /DW %d /W [%s] /CIDToGIDMap %s>>", e.name, desc, d.MissingWidth, e.widths, cidToGID))
	w.objectAt(num, fmt.Sprintf("<</Type /Font /Subtype /Type0 /BaseFont /%s /Encoding /Identity-H /DescendantFonts [%d 0 R] /ToUnicode %d 0 R>>",
		e.name, cid, toUnicode))
}

// widths is the CIDFont's /W array: the width of each character shown that
// the font has, in runs of consecutive CIDs ("c [w1 w2 ...]").
func widths(f *ttf, runes []rune) string {
	var b strings.Builder
	prev := rune(-2)
	for _, r := range runes {
		if f.glyph[r] == 0 {
			continue // the default width, /DW
		}
		if r != prev+1 {
			if prev >= 0 {
				b.WriteString("] ")
			}
			b.WriteString(strconv.Itoa(int(r)))
			b.WriteString(" [")
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(f.width(r)))
		prev = r
	}
	if prev >= 0 {
		b.WriteByte(']')
	}
	return b.String()
}

// subsetTag is the six capital letters that name a font subset, derived
// from the characters in it.
func subsetTag(runes []rune) string {
	h := fnv.New64a()
	for _, r := range runes {
		_, _ = h.Write([]byte{byte(r >> 8), byte(r)}) // BMP code points
	}
	sum := h.Sum64()
	tag := make([]byte, 6)
	for i := range tag {
		tag[i] = 'A' + byte(sum%26)
		sum /= 26
	}
	return string(tag)
}

// toUnicodeCMap maps each CID shown (its code point) to its character.
func toUnicodeCMap(runes []rune) []byte {
	var b bytes.Buffer
	b.WriteString("/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n" +
		"/CIDSystemInfo <</Registry (Adobe) /Ordering (UCS) /Supplement 0>> def\n" +
		"/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n" +
		"1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n")
	for len(runes) > 0 {
		n := min(len(runes), 100) // at most 100 entries per block
		fmt.Fprintf(&b, "%d beginbfchar\n", n)
		for _, r := range runes[:n] {
			fmt.Fprintf(&b, "<%04X> <%04X>\n", r, r)
		}
		b.WriteString("endbfchar\n")
		runes = runes[n:]
	}
	b.WriteString("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend")
	return b.Bytes()
}

// docMeta is what the information dictionary and the XMP both say.
type docMeta struct {
	title, author, subject string
	level                  string // fx:ConformanceLevel
	xrechnung              bool
	noAttachment           bool      // no XML embedded: no Factur-X metadata either
	date                   time.Time // issue date, midnight UTC
}

func newDocMeta(v *view) docMeta {
	m := docMeta{
		title:     v.Title + " " + v.Number,
		author:    v.Seller.Name,
		subject:   v.Title + " " + v.Number + " vom " + v.Issue + " an " + v.Buyer.Name,
		level:     "EN 16931",
		xrechnung: v.XRechnung,
		date:      v.IssueDate,
	}
	if v.Test {
		m.title = "TESTDOKUMENT " + m.title
	}
	if v.XRechnung {
		m.level = "XRECHNUNG"
	}
	return m
}

// relationship is the attachment's /AFRelationship: the XML is the
// alternative representation of a ZUGFeRD invoice, and the source of the
// XRechnung reading copy.
func (m docMeta) relationship() string {
	if m.xrechnung {
		return "Source"
	}
	return "Alternative"
}

func (m docMeta) attachmentDesc() string {
	if m.xrechnung {
		return "XRechnung 3.0 (CII)"
	}
	return "ZUGFeRD/Factur-X EN 16931 (CII)"
}

// pdfDate is the issue date as a PDF date string (UTC, "+00'00'").
func (m docMeta) pdfDate() string { return m.date.UTC().Format("D:20060102150405+00'00'") }

func (m docMeta) xmpDate() string { return m.date.UTC().Format("2006-01-02T15:04:05Z") }

// info is the document information dictionary, in a fixed order; each
// entry has its XMP counterpart in xmp.
func (m docMeta) info() [][2]string {
	return [][2]string{
		{"Title", m.title},            // dc:title
		{"Author", m.author},          // dc:creator
		{"Subject", m.subject},        // dc:description
		{"Creator", pdfCreator},       // xmp:CreatorTool
		{"Producer", pdfProducer},     // pdf:Producer
		{"CreationDate", m.pdfDate()}, // xmp:CreateDate
		{"ModDate", m.pdfDate()},      // xmp:ModifyDate
	}
}

// xmp returns the XMP packet: PDF/A identification, the Factur-X extension
// schema with its four properties, and the fx: values.
func (m docMeta) xmp() []byte {
	var b bytes.Buffer
	b.Grow(4096)
	esc := func(s string) string {
		var e bytes.Buffer
		_ = xml.EscapeText(&e, []byte(s))
		return e.String()
	}
	fmt.Fprintf(&b, `<?xpacket begin="%s" id="W5M0MpCehiHzreSzNTczkc9d"?>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/">
   <pdfaid:part>3</pdfaid:part>
   <pdfaid:conformance>B</pdfaid:conformance>
  </rdf:Description>
  <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
   <dc:format>application/pdf</dc:format>
   <dc:title><rdf:Alt><rdf:li xml:lang="x-default">%s</rdf:li></rdf:Alt></dc:title>
   <dc:creator><rdf:Seq><rdf:li>%s</rdf:li></rdf:Seq></dc:creator>
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default">%s</rdf:li></rdf:Alt></dc:description>
  </rdf:Description>
  <rdf:Description rdf:about="" xmlns:pdf="http://ns.adobe.com/pdf/1.3/">
   <pdf:Producer>%s</pdf:Producer>
  </rdf:Description>
  <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">
   <xmp:CreatorTool>%s</xmp:CreatorTool>
   <xmp:CreateDate>%s</xmp:CreateDate>
   <xmp:ModifyDate>%s</xmp:ModifyDate>
   <xmp:MetadataDate>%s</xmp:MetadataDate>
  </rdf:Description>
`, "\uFEFF", esc(m.title), esc(m.author), esc(m.subject), esc(pdfProducer), esc(pdfCreator),
		m.xmpDate(), m.xmpDate(), m.xmpDate())
	if m.noAttachment {
		b.WriteString(" </rdf:RDF>\n</x:xmpmeta>\n")
		b.WriteString(strings.Repeat(strings.Repeat(" ", 99)+"\n", 20))
		b.WriteString(`<?xpacket end="w"?>`)
		return b.Bytes()
	}
	b.WriteString(`  <rdf:Description rdf:about=""
    xmlns:pdfaExtension="http://www.aiim.org/pdfa/ns/extension/"
    xmlns:pdfaSchema="http://www.aiim.org/pdfa/ns/schema#"
    xmlns:pdfaProperty="http://www.aiim.org/pdfa/ns/property#">
   <pdfaExtension:schemas>
    <rdf:Bag>
     <rdf:li rdf:parseType="Resource">
      <pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema>
      <pdfaSchema:namespaceURI>urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#</pdfaSchema:namespaceURI>
      <pdfaSchema:prefix>fx</pdfaSchema:prefix>
      <pdfaSchema:property>
       <rdf:Seq>
`)
	for _, p := range [][2]string{
		{"DocumentFileName", "The name of the embedded XML document"},
		{"DocumentType", "The type of the hybrid document in capital letters, e.g. INVOICE or ORDER"},
		{"Version", "The actual version of the standard applying to the embedded XML document"},
		{"ConformanceLevel", "The conformance level of the embedded XML document"},
	} {
		fmt.Fprintf(&b, `        <rdf:li rdf:parseType="Resource">
         <pdfaProperty:name>%s</pdfaProperty:name>
         <pdfaProperty:valueType>Text</pdfaProperty:valueType>
         <pdfaProperty:category>external</pdfaProperty:category>
         <pdfaProperty:description>%s</pdfaProperty:description>
        </rdf:li>
`, p[0], p[1])
	}
	fmt.Fprintf(&b, `       </rdf:Seq>
      </pdfaSchema:property>
     </rdf:li>
    </rdf:Bag>
   </pdfaExtension:schemas>
  </rdf:Description>
  <rdf:Description rdf:about="" xmlns:fx="urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#">
   <fx:DocumentType>INVOICE</fx:DocumentType>
   <fx:DocumentFileName>%s</fx:DocumentFileName>
   <fx:Version>1.0</fx:Version>
   <fx:ConformanceLevel>%s</fx:ConformanceLevel>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
`, attachmentName, m.level)
	// Padding lets an editor update the packet in place (XMP spec).
	b.WriteString(strings.Repeat(strings.Repeat(" ", 99)+"\n", 20))
	b.WriteString(`<?xpacket end="w"?>`)
	return b.Bytes()
}

var escapeLiteral = strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`)

// pdfString writes s as a PDF text string: a literal in PDFDocEncoding if
// s is printable ASCII, else UTF-16BE with byte order mark, in hex.
func pdfString(s string) string {
	ascii := true
	for i := range len(s) {
		if s[i] < 0x20 || s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return "(" + escapeLiteral.Replace(s) + ")"
	}
	var b strings.Builder
	b.WriteString("<FEFF")
	for _, u := range utf16.Encode([]rune(s)) {
		fmt.Fprintf(&b, "%04X", u)
	}
	b.WriteByte('>')
	return b.String()
}
