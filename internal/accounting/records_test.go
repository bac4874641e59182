package accounting_test

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/text/encoding/charmap"

	"github.com/o2i-service/o2i/internal/accounting"
	"github.com/o2i-service/o2i/internal/money"
)

// hostile are values a caller could smuggle into a file: separators of
// both formats, quotes, line breaks, formulas.
var hostile = []string{
	`=HYPERLINK("http://evil.example";"klick")`,
	"+49 30 1234",
	"-5 Rabatt",
	"@SUM(A1:A9)",
	"\t=cmd|' /C calc'!A0",
	"Zeile 1\r\nZeile 2;\"zitiert\",x",
	"\r\n=1+1",
	"Müller & Söhne, Köln; 5 € \"netto\"",
}

// readCSV parses b with encoding/csv (sep as separator, strict quotes,
// records of any length).
func readCSV(t *testing.T, b []byte, sep rune) [][]string {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(b))
	r.Comma, r.FieldsPerRecord = sep, -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("encoding/csv cannot read the file back: %v\n%s", err, b)
	}
	return recs
}

// TestDATEVRoundTrip writes bookings with hostile texts, VAT IDs and a
// hostile label, and reads the file back with encoding/csv: the same
// records, no extra record, free text neutralised, identifiers unchanged.
func TestDATEVRoundTrip(t *testing.T) {
	t.Parallel()
	col := func(name string) int {
		for i, c := range accounting.Columns {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	wantText := []string{
		`'=HYPERLINK("http://evil.example";"klick")`,
		"'+49 30 1234",
		"'-5 Rabatt",
		"'@SUM(A1:A9)",
		"' =cmd|' /C calc'!A0",
		"Zeile 1  Zeile 2;\"zitiert\",x",
		"'  =1+1",
		"Müller & Söhne, Köln; 5 € \"netto\"",
	}
	// Identifiers keep what they hold (a quoted field reads a CR LF back as
	// LF, so these hold LF only).
	vatIDs := []string{"FR12;34\"5\n6", "=FR12345678901", "-AT", "DE 123,456"}
	var bs []accounting.Booking
	for i, s := range hostile {
		bs = append(bs, accounting.Booking{
			Date: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Cents: money.Cents(1234 + i), Debit: "10000", Credit: "8125",
			BU: "40", Document: "RE-2026-00000" + string(rune('1'+i)), Text: s, EUVATID: vatIDs[i%len(vatIDs)], EURate: "20,00",
		})
	}
	h := accounting.Header{Consultant: 1001, Client: 1, FiscalYearStart: d(2026, 1, 1), From: d(2026, 3, 1), To: d(2026, 3, 31),
		Created: time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC), Chart: accounting.SKR03, Label: "=2+5;\"\r\nLabel"}
	var buf bytes.Buffer
	if err := accounting.WriteDATEV(&buf, h, bs); err != nil {
		t.Fatal(err)
	}
	utf8, err := charmap.Windows1252.NewDecoder().Bytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	recs := readCSV(t, utf8, ';')
	if len(recs) != 2+len(bs) {
		t.Fatalf("%d records, want %d (header, column names, %d bookings)", len(recs), 2+len(bs), len(bs))
	}
	if len(recs[0]) != 31 || recs[0][0] != "EXTF" || recs[0][16] != "'=2+5;\"  Label" {
		t.Errorf("header record: %d fields, %q, label %q", len(recs[0]), recs[0][0], recs[0][16])
	}
	if diff := cmp.Diff(accounting.Columns, recs[1]); diff != "" {
		t.Errorf("column names (-want +got):\n%s", diff)
	}
	for i, rec := range recs[2:] {
		if len(rec) != len(accounting.Columns) {
			t.Fatalf("booking %d has %d fields", i, len(rec))
		}
		b := bs[i]
		got := []string{rec[col("Umsatz (ohne Soll/Haben-Kz)")], rec[col("Konto")], rec[col("BU-Schlüssel")], rec[col("Belegfeld 1")],
			rec[col("Buchungstext")], rec[col("EU-Land u. UStID")], rec[col("EU-Steuersatz")]}
		want := []string{strings.Replace(b.Cents.String(), ".", ",", 1), b.Debit, b.BU, b.Document,
			wantText[i], b.EUVATID, b.EURate}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("booking %d (-want +got):\n%s", i, diff)
		}
	}

	// An amount, date or account that would break the record is refused.
	bad := bs[0]
	bad.Debit = "10000;x"
	if err := accounting.WriteDATEV(&buf, h, []accounting.Booking{bad}); err == nil || !strings.Contains(err.Error(), "separator") {
		t.Errorf("account with a separator: %v, want refused", err)
	}
}

// TestTaxOfficeCSVRoundTrip writes the EC sales list and the OSS return
// with hostile identifiers and reads them back with encoding/csv: the same
// records, no extra record; ordinary rows keep the published layout.
func TestTaxOfficeCSVRoundTrip(t *testing.T) {
	t.Parallel()
	var ecsl []accounting.ECSLRow
	var oss []accounting.OSSRow
	for i, s := range hostile {
		ecsl = append(ecsl, accounting.ECSLRow{Country: string([]rune(s)[:2]), VATNumber: s, Kind: accounting.ECSLGoods, NetCents: money.Cents(10000 * (i + 1))})
		oss = append(oss, accounting.OSSRow{Country: s, Rate: money.Int(20), Standard: true, NetCents: 2000, TaxCents: 400})
	}
	ecsl = append(ecsl, accounting.ECSLRow{Country: "FR", VATNumber: "12345678901", Kind: accounting.ECSLServices, NetCents: 25050})
	oss = append(oss, accounting.OSSRow{Country: "AT", Rate: money.Int(10), NetCents: 1000, TaxCents: 100})

	var b bytes.Buffer
	if err := accounting.WriteECSL(&b, ecsl); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\nFR,12345678901,251,S\r\n")) {
		t.Errorf("an ordinary EC sales list row is not in the published layout:\n%s", b.Bytes())
	}
	recs := readCSV(t, b.Bytes(), ',')
	want := [][]string{{"#v1.0"}, {"#ve1.0"}, {"Laenderkennzeichen", "USt-IdNr.", "Betrag(EUR)", "Art der Leistung"}}
	for _, r := range ecsl {
		want = append(want, []string{r.Country, r.VATNumber, strconv.FormatInt(r.Euros(), 10), r.Kind})
	}
	// Quoted fields read CR LF back as LF.
	if diff := cmp.Diff(lf(want), recs); diff != "" {
		t.Errorf("EC sales list read back (-want +got):\n%s", diff)
	}

	b.Reset()
	if err := accounting.WriteOSS(&b, oss); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n3,AT,REDUCED,10.00,10.00,1.00\r\n")) {
		t.Errorf("an ordinary OSS row is not in the published layout:\n%s", b.Bytes())
	}
	recs = readCSV(t, b.Bytes(), ',')
	want = [][]string{{"#v1.0"}, {"#ve1.2"}, {"Satzart", "Land des Verbrauchs", "Umsatzsteuertyp", "Umsatzsteuersatz", "Steuerbemessungsgrundlage", "Umsatzsteuerbetrag"}}
	for _, r := range oss {
		typ := "REDUCED"
		if r.Standard {
			typ = "STANDARD"
		}
		want = append(want, []string{"3", r.Country, typ, r.Rate.String() + ".00", r.NetCents.String(), r.TaxCents.String()})
	}
	if diff := cmp.Diff(lf(want), recs); diff != "" {
		t.Errorf("OSS return read back (-want +got):\n%s", diff)
	}
}

// lf replaces CR LF by LF in every field, as encoding/csv reads a quoted one.
func lf(recs [][]string) [][]string {
	out := make([][]string, len(recs))
	for i, r := range recs {
		out[i] = make([]string, len(r))
		for j, f := range r {
			out[i][j] = strings.ReplaceAll(f, "\r\n", "\n")
		}
	}
	return out
}
