package accounting

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
)

// Streaming. An export of a year is written booking by booking, never held
// whole: its bookings come from a few sources, each already in the order
// Bookings sorts (date, then document, then as produced), and Merge
// interleaves them into exactly the order Bookings gives for the same
// documents and payments. The sources are, in the order Bookings appends
// them (which decides among equal date and document):
//
//	documents   the bookings of each document on its issue date (IssueBookings),
//	            by issue date, then document number
//	releases    the month-first releases of deferred revenue (ReleaseBookings),
//	            by month, then document number
//	payments    provider payments (PaymentBooking), by time, then reference
//	refunds     provider refunds (PaymentBooking), by time, then reference
//
// Document numbers compare as Go strings (bytewise); a document has its
// issue bookings and its releases on different days, and one number names
// one document, so the two document sources never tie.

// Stream yields bookings in order: ok false when it is exhausted.
type Stream func() (b Booking, ok bool, err error)

// kept is b as Bookings keeps it: nothing for a zero amount, a negative
// amount turned positive by swapping debit and credit, and only when dated
// from..to.
func kept(b Booking, from, to time.Time) (Booking, bool) {
	if b.Cents == 0 {
		return b, false
	}
	if b.Cents < 0 {
		b.Cents = -b.Cents
		b.Debit, b.Credit = b.Credit, b.Debit
	}
	if d := day(b.Date); d.Before(day(from)) || d.After(day(to)) {
		return b, false
	}
	return b, true
}

// IssueBookings are d's bookings on its issue date that fall in from..to,
// as Bookings keeps them, in Bookings' order. A test document has none.
func IssueBookings(s Settings, d Document, from, to time.Time) ([]Booking, error) {
	return documentBookingsOn(s, d, from, to, func(b Booking) bool { return day(b.Date).Equal(day(d.Invoice.IssueDate)) })
}

// ReleaseBookings are d's releases of deferred revenue dated on month (the
// first of a month) that fall in from..to, in Bookings' order. The debtor
// does not matter to them.
func ReleaseBookings(s Settings, d Document, month, from, to time.Time) ([]Booking, error) {
	if day(month).Equal(day(d.Invoice.IssueDate)) {
		return nil, nil
	}
	return documentBookingsOn(s, d, from, to, func(b Booking) bool { return day(b.Date).Equal(day(month)) })
}

func documentBookingsOn(s Settings, d Document, from, to time.Time, on func(Booking) bool) ([]Booking, error) {
	if d.Invoice.Test {
		return nil, nil
	}
	bs, err := documentBookings(s, d)
	if err != nil {
		return nil, err
	}
	var out []Booking
	for _, b := range bs {
		if !on(b) {
			continue
		}
		if b, ok := kept(b, from, to); ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// PaymentBooking is p's booking as Bookings keeps it; ok false when it has
// none in from..to (a test payment, nothing paid).
func PaymentBooking(a Accounts, p Payment, from, to time.Time) (Booking, bool) {
	if p.Test {
		return Booking{}, false
	}
	debtor := p.Debtor
	if debtor == "" {
		debtor = a.Debtor
	}
	text := "Zahlung " + p.OrderNo
	if p.Cents < 0 {
		text = "Erstattung " + p.OrderNo
	}
	return kept(Booking{Date: p.Date, Cents: p.Cents, Debit: a.Payments, Credit: debtor, Document: p.Reference, Text: text}, from, to)
}

// Merge calls emit with the bookings of the streams in Bookings' order:
// by date, then document, then the stream given first. Each stream must be
// in that order itself.
func Merge(emit func(Booking) error, streams ...Stream) error {
	type head struct {
		b  Booking
		ok bool
	}
	heads := make([]head, len(streams))
	for i, s := range streams {
		b, ok, err := s()
		if err != nil {
			return err
		}
		heads[i] = head{b, ok}
	}
	for {
		at := -1
		for i, h := range heads {
			if !h.ok {
				continue
			}
			if at < 0 || before(h.b, heads[at].b) {
				at = i
			}
		}
		if at < 0 {
			return nil
		}
		if err := emit(heads[at].b); err != nil {
			return err
		}
		b, ok, err := streams[at]()
		if err != nil {
			return err
		}
		heads[at] = head{b, ok}
	}
}

// before is Bookings' order: date, then document.
func before(a, b Booking) bool {
	if !a.Date.Equal(b.Date) {
		return a.Date.Before(b.Date)
	}
	return a.Document < b.Document
}

// DATEVWriter writes a Buchungsstapel record by record (see WriteDATEV),
// each record encoded to Windows-1252 and written to the underlying writer
// at once: the header and column names when it is made, then one booking
// per Write.
type DATEVWriter struct {
	w   io.Writer
	rw  recordWriter
	enc *encoding.Encoder
	row []field
}

// NewDATEVWriter writes the header record of h and the column names to w.
func NewDATEVWriter(w io.Writer, h Header) (*DATEVWriter, error) {
	if _, err := CheckRange(h.From, h.To); err != nil {
		return nil, err
	}
	dw := &DATEVWriter{w: w, rw: recordWriter{f: datevFormat}, enc: encoding.ReplaceUnsupported(charmap.Windows1252.NewEncoder()),
		row: make([]field, len(Columns))}
	skr := "03"
	if h.Chart == SKR04 {
		skr = "04"
	}
	dw.rw.write(
		ident("EXTF"), plain("700"), plain("21"), ident("Buchungsstapel"), plain("13"),
		plain(h.Created.UTC().Format("20060102150405")+fmt.Sprintf("%03d", h.Created.Nanosecond()/1e6)),
		plain(""), ident("RE"), ident("o2i"), ident(""), plain(strconv.Itoa(h.Consultant)), plain(strconv.Itoa(h.Client)),
		plain(h.FiscalYearStart.Format("20060102")), plain("4"), plain(h.From.Format("20060102")), plain(h.To.Format("20060102")),
		text(h.Label, 30), ident(""), plain("1"), plain("0"), plain("0"), ident("EUR"),
		plain(""), ident(""), plain(""), plain(""), ident(skr), plain(""), plain(""), ident(""), ident(""),
	)
	names := make([]field, len(Columns))
	for i, c := range Columns {
		names[i] = plain(c)
	}
	dw.rw.write(names...)
	return dw, dw.flush()
}

// Write writes one booking. It fails on a booking that is not positive
// and on a field the format cannot hold; nothing of that booking is
// written then.
func (dw *DATEVWriter) Write(b Booking) error {
	if b.Cents <= 0 {
		return fmt.Errorf("accounting: booking %s of %s: amount %s is not positive", b.Text, b.Document, b.Cents)
	}
	row := dw.row
	for i := range row {
		row[i] = plain("")
	}
	row[colAmount] = plain(centsComma(b.Cents))
	row[colSH] = ident("S")
	row[colCurrency] = ident("EUR")
	row[colAccount] = plain(b.Debit)
	row[colContra] = plain(b.Credit)
	if b.BU != "" {
		row[colBU] = ident(b.BU)
	}
	row[colDate] = plain(b.Date.Format("0201"))
	row[colDoc1] = ident(docField(b.Document))
	row[colText] = text(b.Text, 60)
	if b.EUVATID != "" {
		row[colEUVATID] = ident(b.EUVATID)
	}
	if b.EURate != "" {
		row[colEURate] = plain(b.EURate)
	}
	row[colLocked] = plain("0")
	if !b.ServiceDate.IsZero() {
		row[colServiceDate] = plain(b.ServiceDate.Format("02012006"))
	}
	dw.rw.write(row...)
	return dw.flush()
}

// flush encodes and writes what the record writer holds.
func (dw *DATEVWriter) flush() error {
	if dw.rw.err != nil {
		return dw.rw.err
	}
	out, err := dw.enc.Bytes(dw.rw.buf.Bytes())
	dw.rw.buf.Reset()
	if err != nil {
		return fmt.Errorf("accounting: encode Windows-1252: %w", err)
	}
	_, err = dw.w.Write(out)
	return err
}
