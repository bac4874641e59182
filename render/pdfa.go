package render

import (
	"bytes"
	"crypto/md5"
	_ "embed"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// PDF/A-3b with the Factur-X / ZUGFeRD structure, added to maroto's plain PDF
// with pdfcpu (maroto's PDF library cannot write the catalog entries):
//
//   - the XML as associated file: an EmbeddedFile stream /Subtype /text#2Fxml
//     with /Params /ModDate, a file specification with /F, /UF and
//     /AFRelationship, listed in the catalog /AF array and in the
//     EmbeddedFiles name tree;
//   - XMP metadata (pdfaid part 3, conformance B, the Factur-X extension
//     schema and its fx: properties, Dublin Core and dates);
//   - an OutputIntent /GTS_PDFA1 with the sRGB ICC profile (assets/);
//   - a document information dictionary equal to the XMP and a trailer /ID.
//
// pdfcpu rewrites the whole file, which gives the PDF/A header (with its
// binary comment line) and one clean revision, but it stamps the clock into
// the information dictionary and the file ID whenever it writes a whole file.
// So the information dictionary and the ID that count are written in a small
// incremental update on top: they carry the issue date and a digest of the
// XML, equal to the XMP. render itself never reads the clock.
//
// Two renderings of one XML therefore show the same pages and carry the same
// metadata and ID, but are not byte-identical: the superseded first-revision
// dictionary and ID hold pdfcpu's writing time, and maroto's PDF library
// numbers the two fonts in map order (maroto offers no way to sort it).

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
	pdfProducer = "o2i render (maroto v2, pdfcpu)"
	iccName     = "sRGB IEC61966-2.1"
)

// toPDFA3 turns maroto's PDF into a PDF/A-3b with xml embedded.
func toPDFA3(plain, xmlData []byte, v *view) ([]byte, error) {
	meta := newDocMeta(v)
	ctx, err := api.ReadContext(bytes.NewReader(plain), pdfcpuConfig())
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if err := addPDFAStructure(ctx, xmlData, meta); err != nil {
		return nil, err
	}
	var first bytes.Buffer
	first.Grow(len(plain) + len(xmlData) + len(iccSRGB) + 8192)
	if err := api.WriteContext(ctx, &first); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}

	// The update: information dictionary and ID as the XMP says.
	ctx, err = api.ReadContext(bytes.NewReader(first.Bytes()), pdfcpuConfig())
	if err != nil {
		return nil, fmt.Errorf("reread: %w", err)
	}
	if ctx.Info == nil {
		return nil, fmt.Errorf("no information dictionary after writing")
	}
	info, err := ctx.DereferenceDict(*ctx.Info)
	if err != nil {
		return nil, fmt.Errorf("information dictionary: %w", err)
	}
	if info == nil {
		return nil, fmt.Errorf("information dictionary is empty")
	}
	clear(info)
	for k, s := range meta.info() {
		info[k] = pdfText(s)
	}
	sum := md5.Sum(xmlData)
	id := types.HexLiteral(strings.ToUpper(hex.EncodeToString(sum[:])))
	ctx.ID = types.Array{id, id}
	ctx.Write.Increment = true
	ctx.Write.Offset = ctx.Read.FileSize
	ctx.Write.IncrementWithObjNr(ctx.Info.ObjectNumber.Value())
	out := bytes.NewBuffer(first.Bytes())
	if err := api.WriteIncrement(ctx, out); err != nil {
		return nil, fmt.Errorf("write update: %w", err)
	}
	return out.Bytes(), nil
}

// pdfcpuConfig is pdfcpu's configuration for this package, built here
// instead of with model.NewDefaultConfiguration, which reads and creates a
// configuration directory in the user's home.
func pdfcpuConfig() *model.Configuration {
	return &model.Configuration{
		Reader15:                  true,
		ValidationMode:            model.ValidationRelaxed,
		UnsupportedResourcePolicy: model.UnsupportedResourceSkip,
		Eol:                       types.EolLF,
		// A classic cross-reference table keeps the incremental update
		// simple; object streams need cross-reference streams.
		WriteObjectStream: false,
		WriteXRefStream:   false,
		Limits:            model.DefaultResourceLimits(),
	}
}

// addPDFAStructure adds attachment, XMP and output intent to the catalog.
func addPDFAStructure(ctx *model.Context, xmlData []byte, meta docMeta) error {
	root, err := ctx.Catalog()
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}

	// The embedded file and its file specification (PDF/A-3 associated file).
	ef, err := ctx.NewStreamDictForBuf(xmlData)
	if err != nil {
		return err
	}
	ef.InsertName("Type", "EmbeddedFile")
	ef.InsertName("Subtype", "text/xml")
	params := types.NewDict()
	params.InsertInt("Size", len(xmlData))
	params.Insert("ModDate", types.StringLiteral(meta.pdfDate()))
	params.Insert("CreationDate", types.StringLiteral(meta.pdfDate()))
	sum := md5.Sum(xmlData)
	params.Insert("CheckSum", types.HexLiteral(hex.EncodeToString(sum[:])))
	ef.Insert("Params", params)
	if err := ef.Encode(); err != nil {
		return fmt.Errorf("embedded file: %w", err)
	}
	efRef, err := ctx.IndRefForNewObject(*ef)
	if err != nil {
		return err
	}
	spec := types.NewDict()
	spec.InsertName("Type", "Filespec")
	spec.Insert("F", types.StringLiteral(attachmentName))
	spec.Insert("UF", types.StringLiteral(attachmentName))
	spec.Insert("Desc", pdfText(meta.attachmentDesc()))
	spec.InsertName("AFRelationship", meta.relationship())
	efDict := types.NewDict()
	efDict.Insert("F", *efRef)
	efDict.Insert("UF", *efRef)
	spec.Insert("EF", efDict)
	specRef, err := ctx.IndRefForNewObject(spec)
	if err != nil {
		return err
	}
	root["AF"] = types.Array{*specRef}
	tree := types.NewDict()
	tree.Insert("Names", types.Array{types.StringLiteral(attachmentName), *specRef})
	root["Names"] = types.Dict{"EmbeddedFiles": tree}

	// XMP metadata: uncompressed, as PDF/A requires.
	md := types.StreamDict{Dict: types.NewDict(), Content: meta.xmp()}
	md.InsertName("Type", "Metadata")
	md.InsertName("Subtype", "XML")
	if err := md.Encode(); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	mdRef, err := ctx.IndRefForNewObject(md)
	if err != nil {
		return err
	}
	root["Metadata"] = *mdRef

	// Output intent with the sRGB profile: maroto paints in DeviceRGB.
	icc, err := ctx.NewStreamDictForBuf(iccSRGB)
	if err != nil {
		return err
	}
	icc.InsertInt("N", 3)
	if err := icc.Encode(); err != nil {
		return fmt.Errorf("ICC profile: %w", err)
	}
	iccRef, err := ctx.IndRefForNewObject(*icc)
	if err != nil {
		return err
	}
	oi := types.NewDict()
	oi.InsertName("Type", "OutputIntent")
	oi.InsertName("S", "GTS_PDFA1")
	oi.Insert("OutputConditionIdentifier", types.StringLiteral(iccName))
	oi.Insert("Info", types.StringLiteral(iccName))
	oi.Insert("RegistryName", types.StringLiteral("http://www.color.org"))
	oi.Insert("DestOutputProfile", *iccRef)
	root["OutputIntents"] = types.Array{oi}

	root["Lang"] = types.StringLiteral("de-DE")
	root["ViewerPreferences"] = types.Dict{"DisplayDocTitle": types.Boolean(true)}
	return nil
}

// docMeta is what the information dictionary and the XMP both say.
type docMeta struct {
	title, author, subject string
	level                  string // fx:ConformanceLevel
	xrechnung              bool
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

// info is the document information dictionary; each entry has its XMP
// counterpart in xmp.
func (m docMeta) info() map[string]string {
	return map[string]string{
		"Title":        m.title,     // dc:title
		"Author":       m.author,    // dc:creator
		"Subject":      m.subject,   // dc:description
		"Creator":      pdfCreator,  // xmp:CreatorTool
		"Producer":     pdfProducer, // pdf:Producer
		"CreationDate": m.pdfDate(), // xmp:CreateDate
		"ModDate":      m.pdfDate(), // xmp:ModifyDate
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

// pdfText encodes s as a PDF text string: PDFDocEncoding for ASCII,
// UTF-16BE with byte order mark otherwise.
func pdfText(s string) types.StringLiteral {
	ascii := true
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		e, err := types.Escape(s)
		if err == nil {
			return types.StringLiteral(*e)
		}
	}
	e, err := types.EscapedUTF16String(s)
	if err != nil {
		return types.StringLiteral("")
	}
	return types.StringLiteral(*e)
}
