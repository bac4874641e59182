package render

import (
	_ "embed"
	"fmt"

	"github.com/johnfercher/maroto/v2"
	"github.com/johnfercher/maroto/v2/pkg/components/col"
	"github.com/johnfercher/maroto/v2/pkg/components/line"
	"github.com/johnfercher/maroto/v2/pkg/components/row"
	"github.com/johnfercher/maroto/v2/pkg/components/text"
	"github.com/johnfercher/maroto/v2/pkg/config"
	"github.com/johnfercher/maroto/v2/pkg/consts/align"
	"github.com/johnfercher/maroto/v2/pkg/consts/fontstyle"
	"github.com/johnfercher/maroto/v2/pkg/consts/pagesize"
	"github.com/johnfercher/maroto/v2/pkg/core"
	"github.com/johnfercher/maroto/v2/pkg/props"

	"github.com/o2i-service/o2i/internal/einvoice"
)

// The fonts are embedded into every PDF (PDF/A forbids relying on the
// reader's fonts); Liberation Sans is under the SIL Open Font License, see
// assets/.
var (
	//go:embed assets/LiberationSans-Regular.ttf
	fontRegular []byte
	//go:embed assets/LiberationSans-Bold.ttf
	fontBold []byte
)

const fontFamily = "LiberationSans"

// PDF renders the human-readable invoice of a CII document written by CII
// and returns a PDF/A-3 with the XML embedded (as factur-x.xml, see
// attachmentName). Everything printed is read from xml, which is embedded
// byte for byte; the PDF's dates are the issue date, so the same XML gives
// the same PDF, byte for byte. It fails on input that is not a CII invoice
// as CII writes it (empty, not XML, another root, a missing mandatory
// element, an amount that is not a decimal), never returning a partial PDF.
// It is safe for concurrent use.
func PDF(xml []byte) ([]byte, error) { return renderPDF(xml, nil, false) }

// PDFOf is PDF laid out from read, the document einvoice read from xml
// (einvoice.CheckAndReadCII), without reading the XML again; xml is still
// the file the PDF embeds.
func PDFOf(xml []byte, read *einvoice.Document) ([]byte, error) { return renderPDF(xml, read, false) }

// SmallAmountPDF renders a small-amount invoice (Kleinbetragsrechnung, § 33
// UStDV: up to 250 euros gross) from the CII that CII writes of it: the
// same layout, titled as such, with the buyer as far as known, and a PDF/A-3
// without an embedded XML, since a small-amount invoice is no e-invoice
// (the XML is not archived or served either).
func SmallAmountPDF(xml []byte) ([]byte, error) { return renderPDF(xml, nil, true) }

// renderPDF renders xml, laid out from read when set, else from xml read.
func renderPDF(xml []byte, read *einvoice.Document, smallAmount bool) ([]byte, error) {
	var v *view
	var err error
	if read != nil {
		v, err = viewOf(read, smallAmount)
	} else {
		v, err = readView(xml, smallAmount)
	}
	if err != nil {
		return nil, fmt.Errorf("render: PDF: %w", err)
	}
	doc, fonts, err := layout(v)
	if err != nil {
		return nil, fmt.Errorf("render: PDF %s: layout: %w", v.Number, err)
	}
	embed := xml
	if smallAmount {
		embed = nil
	}
	out, err := toPDFA3(doc, fonts, embed, v)
	if err != nil {
		return nil, fmt.Errorf("render: PDF %s: PDF/A-3: %w", v.Number, err)
	}
	return out, nil
}

// Sizes in points and colours of the layout.
const (
	sizeBody  = 9.0
	sizeSmall = 7.0
	sizeTitle = 16.0
)

var (
	colorGrey   = &props.Color{Red: 90, Green: 90, Blue: 90}
	colorShade  = &props.Color{Red: 235, Green: 235, Blue: 235}
	colorRed    = &props.Color{Red: 190, Green: 20, Blue: 20}
	colorWhite  = &props.Color{Red: 255, Green: 255, Blue: 255}
	colorBorder = &props.Color{Red: 160, Green: 160, Blue: 160}
)

// layout lays v out on A4 pages with maroto and returns gofpdf's plain PDF
// (uncompressed, with placeholders for the fonts) and the fonts it used.
func layout(v *view) ([]byte, []*fontUse, error) { return layoutWith(v, true) }

// layoutWith is layout; fontOnChange gives maroto a fontSelector (tests
// compare with the pages laid out without one).
func layoutWith(v *view, fontOnChange bool) ([]byte, []*fontUse, error) {
	cfg := config.NewBuilder().
		WithPageSize(pagesize.A4).
		WithLeftMargin(18).WithRightMargin(15).WithTopMargin(10).WithBottomMargin(12).
		// No custom fonts: attachFonts adds them, parsed once (gofpdf.go).
		WithDefaultFont(&props.Font{Family: fontFamily, Size: sizeBody}).
		WithPageNumber(props.PageNumber{
			Pattern: "Seite {current} von {total}", Place: props.RightBottom,
			Family: fontFamily, Size: sizeSmall, Color: colorGrey,
		}).
		// toPDFA3 compresses the streams.
		WithCompression(false).
		Build()
	m := maroto.New(cfg)
	fonts, err := attachFonts(m, v.IssueDate, fontOnChange)
	if err != nil {
		return nil, nil, err
	}
	if err := m.RegisterHeader(header(v)...); err != nil {
		return nil, nil, err
	}
	if err := m.RegisterFooter(footer(v)...); err != nil {
		return nil, nil, err
	}
	m.AddRows(heading(v)...)
	m.AddRows(parties(v)...)
	m.AddRows(notes(v)...)
	m.AddRows(lineTable(v)...)
	m.AddRows(vatAndTotals(v)...)
	m.AddRows(payment(v)...)
	doc, err := m.Generate()
	if err != nil {
		return nil, nil, err
	}
	used, err := fonts.written()
	if err != nil {
		return nil, nil, err
	}
	return doc.GetBytes(), used, nil
}

// Small constructors for the grid (12 columns).

func txt(s string, p props.Text) core.Component { return text.New(s, p) }

func cell(size int, s string, p props.Text) core.Col {
	if s == "" {
		return col.New(size)
	}
	return text.NewCol(size, s, p)
}

func autoRow(cols ...core.Col) core.Row { return row.New().Add(cols...) }

func space(h float64) core.Row { return row.New(h) }

func rule() core.Row {
	return line.NewRow(3, props.Line{Color: colorBorder, Thickness: 0.2, SizePercent: 100, OffsetPercent: 50})
}

var (
	pBody   = props.Text{Size: sizeBody, Top: 0.6, Bottom: 0.6}
	pBold   = props.Text{Size: sizeBody, Style: fontstyle.Bold, Top: 0.6, Bottom: 0.6}
	pRight  = props.Text{Size: sizeBody, Align: align.Right, Top: 0.6, Bottom: 0.6, Left: 1}
	pRightB = props.Text{Size: sizeBody, Style: fontstyle.Bold, Align: align.Right, Top: 0.6, Bottom: 0.6, Left: 1}
	pSmall  = props.Text{Size: sizeSmall, Color: colorGrey, Top: 0.4, Bottom: 0.4}
	pLabel  = props.Text{Size: sizeSmall, Style: fontstyle.Bold, Color: colorGrey, Top: 0.8, Bottom: 0.4}
	pTHead  = props.Text{Size: sizeSmall, Style: fontstyle.Bold, Top: 1, Bottom: 1, Right: 1}
	pTHeadR = props.Text{Size: sizeSmall, Style: fontstyle.Bold, Top: 1, Bottom: 1, Align: align.Right, Left: 1}
)

// header repeats on every page: the test banner, then the document's name.
func header(v *view) []core.Row {
	var rows []core.Row
	if v.Test {
		rows = append(rows, row.New(11).WithStyle(&props.Cell{BackgroundColor: colorRed}).Add(
			text.NewCol(12, "TESTDOKUMENT – keine Rechnung · TEST DOCUMENT – not an invoice", props.Text{
				Size: 12, Style: fontstyle.Bold, Color: colorWhite, Align: align.Center, Top: 3,
			})),
			space(2))
	}
	rows = append(rows,
		autoRow(
			cell(7, v.Seller.Name, pSmall),
			cell(5, v.Title+" "+v.Number+" vom "+v.Issue, props.Text{Size: sizeSmall, Color: colorGrey, Align: align.Right, Top: 0.4}),
		),
		rule())
	return rows
}

// footer repeats on every page: the seller's identity as §14 UStG wants it
// and which document counts.
func footer(v *view) []core.Row {
	s := &v.Seller
	id := joinNonEmpty(" · ", s.Name, joinNonEmpty(", ", s.Address...))
	tax := joinNonEmpty(" · ", prefixed("USt-IdNr. ", s.VATID), prefixed("Steuernummer ", s.TaxNumber), s.LegalID)
	return []core.Row{
		rule(),
		autoRow(cell(10, id, pSmall)),
		autoRow(cell(10, tax, pSmall)),
		autoRow(cell(10, closing(v), pSmall)),
		space(3),
	}
}

func heading(v *view) []core.Row {
	rows := []core.Row{
		autoRow(
			col.New(8).Add(txt(v.Title, props.Text{Size: sizeTitle, Style: fontstyle.Bold, Top: 2})),
			col.New(4).Add(txt(v.TitleEN, props.Text{Size: sizeSmall, Color: colorGrey, Align: align.Right, Top: 6})),
		),
	}
	if v.Test {
		rows = append(rows, autoRow(cell(12, "Testbeleg ohne steuerliche Wirkung – keine Rechnung im Sinne des § 14 UStG.",
			props.Text{Size: sizeBody, Style: fontstyle.Bold, Color: colorRed, Top: 1, Bottom: 1})))
	}
	return append(rows, space(2))
}

// parties prints seller and document facts side by side, then buyer and
// deliver-to address.
func parties(v *view) []core.Row {
	facts := []labelled{
		{"Nummer / No.", v.Number},
		{"Datum / Date", v.Issue},
	}
	if v.Supply != "" {
		facts = append(facts, labelled{v.SupplyLabel, v.Supply})
	}
	if v.Preceding != "" {
		facts = append(facts, labelled{"Bezug auf Rechnung / Preceding invoice", v.Preceding})
	}
	if v.OrderNo != "" {
		facts = append(facts, labelled{"Bestellnummer / Order", v.OrderNo})
	}
	if v.BuyerRef != "" {
		label := "Käuferreferenz / Buyer reference"
		if v.XRechnung {
			label = "Leitweg-ID / Buyer reference"
		}
		facts = append(facts, labelled{label, v.BuyerRef})
	}

	rows := sideBySide(
		partyLines("Verkäufer / Seller", &v.Seller, true),
		factLines(facts),
	)
	rows = append(rows, space(2))
	var shipTo [][]core.Col
	if v.ShipTo != nil {
		shipTo = partyLines("Lieferanschrift / Deliver to", v.ShipTo, false)
	}
	rows = append(rows, sideBySide(partyLines("Rechnungsempfänger / Buyer", &v.Buyer, true), shipTo)...)
	return append(rows, space(2))
}

// partyLines returns one half-width line per printed line of p.
func partyLines(label string, p *party, ids bool) [][]core.Col {
	lines := [][]core.Col{{cell(6, label, pLabel)}}
	if p.Name != "" {
		lines = append(lines, []core.Col{cell(6, p.Name, pBold)})
	}
	for _, a := range p.Address {
		lines = append(lines, []core.Col{cell(6, a, pBody)})
	}
	if ids {
		for _, s := range []string{
			joinNonEmpty(" · ", prefixed("USt-IdNr.: ", p.VATID), prefixed("Steuernummer: ", p.TaxNumber)),
			joinNonEmpty(" · ", prefixed("Kennung: ", p.ID), prefixed("Register: ", p.LegalID)),
			prefixed("Kontakt: ", joinNonEmpty(" · ", p.Contact...)), p.Electronic,
		} {
			if s != "" {
				lines = append(lines, []core.Col{cell(6, s, props.Text{Size: sizeSmall, Top: 0.5, Bottom: 0.3, Right: 2})})
			}
		}
	}
	return lines
}

// factLines returns one half-width line (label and value) per fact.
func factLines(facts []labelled) [][]core.Col {
	lines := [][]core.Col{{col.New(6)}}
	for _, f := range facts {
		lines = append(lines, []core.Col{
			cell(2, f.Label, props.Text{Size: sizeSmall, Color: colorGrey, Top: 1, Bottom: 0.5, Right: 1}),
			cell(4, f.Value, pRightB),
		})
	}
	return lines
}

// sideBySide pairs two lists of half-width lines into rows, so a line that
// wraps on one side pushes both sides down.
func sideBySide(left, right [][]core.Col) []core.Row {
	n := max(len(left), len(right))
	rows := make([]core.Row, 0, n)
	for i := range n {
		l, r := []core.Col{col.New(6)}, []core.Col{col.New(6)}
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		rows = append(rows, autoRow(append(l, r...)...))
	}
	return rows
}

func notes(v *view) []core.Row {
	if len(v.Notes) == 0 {
		return nil
	}
	rows := []core.Row{autoRow(cell(12, "Hinweise / Notes", pLabel))}
	for _, n := range v.Notes {
		rows = append(rows, autoRow(cell(12, n, pBody)))
	}
	return append(rows, space(2))
}

// Column widths of the line table (12 in all).
const (
	wPos, wName, wQty, wUnit, wPrice, wTax, wNet = 1, 4, 1, 1, 2, 1, 2
)

func lineTable(v *view) []core.Row {
	rows := []core.Row{
		autoRow(
			cell(wPos, "Pos.", pTHead),
			cell(wName, "Bezeichnung / Item", pTHead),
			cell(wQty, "Menge", pTHeadR),
			cell(wUnit, "Einheit", props.Text{Size: sizeSmall, Style: fontstyle.Bold, Top: 1, Bottom: 1, Left: 1.5}),
			cell(wPrice, "Einzelpreis netto", pTHeadR),
			cell(wTax, "USt", pTHeadR),
			cell(wNet, "Betrag netto", pTHeadR),
		).WithStyle(&props.Cell{BackgroundColor: colorShade}),
	}
	for i := range v.Lines {
		l := &v.Lines[i]
		name := col.New(wName).Add(txt(l.Name, props.Text{Size: sizeBody, Top: 0.8, Bottom: 0.8, Right: 1}))
		if l.SKU != "" {
			name = col.New(wName).Add(
				txt(l.Name, props.Text{Size: sizeBody, Top: 0.8, Right: 1}),
				txt("Art.-Nr. "+l.SKU, props.Text{Size: 6.5, Color: colorGrey, Top: 4.4, Bottom: 0.6, Right: 1}),
			)
		}
		rows = append(rows, autoRow(
			cell(wPos, l.ID, props.Text{Size: sizeBody, Top: 0.8}),
			name,
			cell(wQty, l.Quantity, props.Text{Size: sizeBody, Align: align.Right, Top: 0.8}),
			cell(wUnit, l.Unit, props.Text{Size: sizeBody, Top: 0.8, Left: 1.5}),
			cell(wPrice, l.Price, props.Text{Size: sizeBody, Align: align.Right, Top: 0.8}),
			cell(wTax, l.Tax, props.Text{Size: sizeBody, Align: align.Right, Top: 0.8}),
			cell(wNet, l.Net, props.Text{Size: sizeBody, Align: align.Right, Top: 0.8}),
		))
		for _, ac := range l.AllowancesOrCharges {
			rows = append(rows, autoRow(
				col.New(wPos),
				cell(wName+wQty+wUnit+wPrice+wTax, "darin "+ac.Label, props.Text{Size: sizeSmall, Color: colorGrey, Bottom: 1}),
				cell(wNet, ac.Value, props.Text{Size: sizeSmall, Color: colorGrey, Align: align.Right, Bottom: 1}),
			))
		}
		rows = append(rows, line.NewRow(0.6, props.Line{Color: colorShade, Thickness: 0.2, SizePercent: 100, OffsetPercent: 50}))
	}
	return append(rows, space(4))
}

// vatAndTotals prints the VAT breakdown (left) next to the totals (right).
func vatAndTotals(v *view) []core.Row {
	rows := []core.Row{autoRow(
		cell(3, "USt-Kategorie / VAT category", pTHead),
		cell(1, "Satz", pTHeadR),
		cell(2, "Nettobetrag", pTHeadR),
		cell(2, "Steuerbetrag", pTHeadR),
		col.New(4),
	).WithStyle(&props.Cell{BackgroundColor: colorShade})}
	for _, x := range v.VAT {
		rows = append(rows, autoRow(
			cell(3, x.Category, pBody),
			cell(1, x.Rate, pRight),
			cell(2, x.Base, pRight),
			cell(2, x.Tax, pRight),
			col.New(4),
		))
		if x.Reason != "" {
			rows = append(rows, autoRow(
				cell(8, "Befreiungsgrund: "+x.Reason, props.Text{Size: sizeSmall, Color: colorGrey, Bottom: 1, Right: 2}),
				col.New(4),
			))
		}
	}
	rows = append(rows, space(4))
	for _, t := range v.Totals {
		label, amount := pBody, pRight
		if t.Strong {
			label, amount = pBold, pRightB
		}
		r := autoRow(
			col.New(3),
			cell(4, t.Label, label),
			cell(2, t.LabelEN, props.Text{Size: 6.5, Color: colorGrey, Top: 1.3, Bottom: 0.6}),
			cell(3, t.Amount, amount),
		)
		if t.Strong {
			r.WithStyle(&props.Cell{BackgroundColor: colorShade})
		}
		rows = append(rows, r)
	}
	return append(rows, space(4))
}

func payment(v *view) []core.Row {
	if len(v.Payment) == 0 {
		return nil
	}
	rows := []core.Row{autoRow(cell(12, "Zahlung / Payment", pLabel))}
	for _, p := range v.Payment {
		rows = append(rows, autoRow(cell(3, p.Label, pSmall), cell(9, p.Value, pBody)))
	}
	return append(rows, space(3))
}

// closing names the embedded XML as the document that counts.
func closing(v *view) string {
	if v.SmallAmount {
		return "Kleinbetragsrechnung nach § 33 UStDV (Gesamtbetrag bis 250 Euro): Entgelt und Steuerbetrag in einer Summe mit dem Steuersatz."
	}
	if v.XRechnung {
		return "Lesekopie der XRechnung " + v.Number + " (eingebettet als " + attachmentName +
			"). Maßgeblich ist ausschließlich die XRechnung (XML)."
	}
	return "Lesbare Darstellung der eingebetteten E-Rechnung (" + attachmentName +
		", ZUGFeRD/Factur-X EN 16931). Maßgeblich sind die Daten der XML-Datei."
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func joinNonEmpty(sep string, parts ...string) string {
	out := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if out != "" {
			out += sep
		}
		out += p
	}
	return out
}
