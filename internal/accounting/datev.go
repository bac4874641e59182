package accounting

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"
)

// The DATEV format (EXTF, "Buchungsstapel", header record version 700,
// format category 21, format version 13):
//
//	line 1  the header record: 31 fields, text fields quoted
//	line 2  the column names (125 columns)
//	line 3+ one booking per line, 125 fields
//
// Fields are separated by ';', lines end with CRLF, the file is
// Windows-1252 (characters it lacks become '?'). Amounts have a decimal
// comma and no sign (the direction is the Soll/Haben-Kennzeichen), dates in
// a booking are DDMM (the year comes from the header), text fields are quoted
// with '"' and a '"' inside is doubled; free text is neutralised (see
// records.go).

// Header is what the header record states about a batch.
type Header struct {
	Consultant      int       // Beraternummer (1001 to 9999999)
	Client          int       // Mandantennummer (1 to 99999)
	FiscalYearStart time.Time // WJ-Beginn
	From, To        time.Time // Datum vom, Datum bis: within one fiscal year
	Created         time.Time // Erzeugt am
	Chart           Chart     // Sachkontenrahmen
	Label           string    // Bezeichnung (at most 30 characters)
}

// Columns are the 125 column names of a Buchungsstapel, format version 13.
var Columns = strings.Split("Umsatz (ohne Soll/Haben-Kz);Soll/Haben-Kennzeichen;WKZ Umsatz;Kurs;Basis-Umsatz;WKZ Basis-Umsatz;"+
	"Konto;Gegenkonto (ohne BU-Schlüssel);BU-Schlüssel;Belegdatum;Belegfeld 1;Belegfeld 2;Skonto;Buchungstext;Postensperre;"+
	"Diverse Adressnummer;Geschäftspartnerbank;Sachverhalt;Zinssperre;Beleglink;"+
	"Beleginfo - Art 1;Beleginfo - Inhalt 1;Beleginfo - Art 2;Beleginfo - Inhalt 2;Beleginfo - Art 3;Beleginfo - Inhalt 3;"+
	"Beleginfo - Art 4;Beleginfo - Inhalt 4;Beleginfo - Art 5;Beleginfo - Inhalt 5;Beleginfo - Art 6;Beleginfo - Inhalt 6;"+
	"Beleginfo - Art 7;Beleginfo - Inhalt 7;Beleginfo - Art 8;Beleginfo - Inhalt 8;KOST1 - Kostenstelle;KOST2 - Kostenstelle;"+
	"Kost-Menge;EU-Land u. UStID;EU-Steuersatz;Abw. Versteuerungsart;Sachverhalt L+L;Funktionsergänzung L+L;"+
	"BU 49 Hauptfunktionstyp;BU 49 Hauptfunktionsnummer;BU 49 Funktionsergänzung;"+
	zusatz()+"Stück;Gewicht;Zahlweise;Forderungsart;Veranlagungsjahr;Zugeordnete Fälligkeit;Skontotyp;Auftragsnummer;"+
	"Buchungstyp;USt-Schlüssel (Anzahlungen);EU-Land (Anzahlungen);Sachverhalt L+L (Anzahlungen);EU-Steuersatz (Anzahlungen);"+
	"Erlöskonto (Anzahlungen);Herkunft-Kz;Leerfeld;KOST-Datum;SEPA-Mandatsreferenz;Skontosperre;Gesellschaftername;"+
	"Beteiligtennummer;Identifikationsnummer;Zeichnernummer;Postensperre bis;Bezeichnung SoBil-Sachverhalt;"+
	"Kennzeichen SoBil-Buchung;Festschreibung;Leistungsdatum;Datum Zuord. Steuerperiode;Fälligkeit;Generalumkehr;"+
	"Steuersatz;Land;Abrechnungsreferenz;BVV-Position (Betriebsvermögensvergleich);EU-Mitgliedstaat u. UStID (Ursprung);"+
	"EU-Steuersatz (Ursprung);Abw. Skontokonto", ";")

func zusatz() string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "Zusatzinformation - Art %d;Zusatzinformation - Inhalt %d;", i, i)
	}
	return b.String()
}

// column returns the 0-based index of a column name; it panics on a name
// that is not there (a programming error caught by every test).
func column(name string) int {
	for i, c := range Columns {
		if c == name {
			return i
		}
	}
	panic("accounting: no DATEV column " + name)
}

var (
	colAmount, colSH, colCurrency = column("Umsatz (ohne Soll/Haben-Kz)"), column("Soll/Haben-Kennzeichen"), column("WKZ Umsatz")
	colAccount, colContra, colBU  = column("Konto"), column("Gegenkonto (ohne BU-Schlüssel)"), column("BU-Schlüssel")
	colDate, colDoc1, colText     = column("Belegdatum"), column("Belegfeld 1"), column("Buchungstext")
	colEUVATID, colEURate         = column("EU-Land u. UStID"), column("EU-Steuersatz")
	colLocked, colServiceDate     = column("Festschreibung"), column("Leistungsdatum")
)

// CheckRange reports whether from..to can be one DATEV batch: from not after
// to, both within one calendar year (the fiscal year). field names the bad
// parameter ("to").
func CheckRange(from, to time.Time) (field string, err error) {
	switch {
	case to.Before(from):
		return "to", fmt.Errorf("to %s is before from %s", to.Format(time.DateOnly), from.Format(time.DateOnly))
	case to.Year() != from.Year():
		return "to", fmt.Errorf("from and to must lie in one financial year (a DATEV batch covers one): %s and %s", from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	return "", nil
}

// WriteDATEV writes the batch of bookings with header h to w, Windows-1252.
// Every field goes through one recordWriter (records.go): the booking
// text and the label are free text (neutralised), VAT IDs, document
// numbers and codes are written unchanged; all are quoted. It fails on a
// booking that is not positive and on an amount, date or account that holds
// a separator, a quote or a line break.
func WriteDATEV(w io.Writer, h Header, bookings []Booking) error {
	var buf bytes.Buffer
	dw, err := NewDATEVWriter(&buf, h)
	if err != nil {
		return err
	}
	for _, b := range bookings {
		if err := dw.Write(b); err != nil {
			return err
		}
	}
	_, err = w.Write(buf.Bytes())
	return err
}

// docField is Belegfeld 1: at most 36 characters of a-z A-Z 0-9 $ & % * + - /
// (DATEV's set); anything else becomes '-'.
func docField(s string) string {
	b := []rune(cut(s, 36))
	for i, r := range b {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("$&%*+-/", r)
		if !ok {
			b[i] = '-'
		}
	}
	return string(b)
}
