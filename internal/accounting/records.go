package accounting

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
)

// Every field of the files this package writes (the DATEV Buchungsstapel,
// the tax office's OSS and EC sales list uploads) goes through one writer,
// recordWriter, which knows each field's kind:
//
//	text   free text: names, booking texts, labels. Control characters
//	       become spaces (a line break would start a row of its own in
//	       importers that do not read quotes), and text whose first
//	       character other than a space is = + - or @ gets a ' in front,
//	       so that no spreadsheet takes it for a formula (CSV injection).
//	ident  identifiers and codes: VAT IDs, document numbers, currency,
//	       BU-Schlüssel. Written exactly as they are, never changed.
//	plain  amounts, numbers, dates, account numbers, column names. Written
//	       as they are and never quoted; a value holding the separator, a
//	       quote or a line break is refused (it would shift the columns or
//	       add a row), never written.
//
// Text and ident fields are quoted as the format says: DATEV quotes every
// one ('"' around it, a '"' inside doubled, also when empty); the tax
// office's CSV uploads quote only a value that holds the separator, a quote
// or a line break (RFC 4180), so their usual rows keep the published
// layout byte for byte.

type fieldKind uint8

const (
	kindPlain fieldKind = iota
	kindText
	kindIdent
)

// field is one field of a record.
type field struct {
	kind fieldKind
	s    string
	max  int // text: at most this many characters after neutralising; 0: no limit
}

// text is a free-text field (neutralised); max > 0 cuts it to max characters.
func text(s string, max int) field { return field{kind: kindText, s: s, max: max} }

// ident is an identifier or code, written unchanged.
func ident(s string) field { return field{kind: kindIdent, s: s} }

// plain is an amount, number, date or name written unquoted.
func plain(s string) field { return field{kind: kindPlain, s: s} }

// recordFormat is how a file separates and quotes.
type recordFormat struct {
	sep      byte
	quoteAll bool // every text and ident field quoted (DATEV); else only when needed
}

var (
	datevFormat = recordFormat{sep: ';', quoteAll: true}
	bzstFormat  = recordFormat{sep: ',', quoteAll: false}
)

// recordWriter writes records of one format, each ended by CRLF, into buf.
// The first field it refuses is kept in err, and nothing more is written.
type recordWriter struct {
	f   recordFormat
	buf bytes.Buffer
	err error
}

// write writes one record.
func (w *recordWriter) write(fields ...field) {
	if w.err != nil {
		return
	}
	var rec bytes.Buffer
	for i, f := range fields {
		if i > 0 {
			rec.WriteByte(w.f.sep)
		}
		s, err := w.f.encode(f)
		if err != nil {
			w.err = fmt.Errorf("accounting: field %d of record %q: %w", i+1, rec.String(), err)
			return
		}
		rec.WriteString(s)
	}
	rec.WriteString("\r\n")
	w.buf.Write(rec.Bytes())
}

// encode returns f as the format writes it.
func (rf recordFormat) encode(f field) (string, error) {
	s := f.s
	switch f.kind {
	case kindPlain:
		if rf.special(s) {
			return "", fmt.Errorf("%q holds a separator, a quote or a line break, which a number, date or name never has", s)
		}
		return s, nil
	case kindText:
		s = neutralize(s)
		if f.max > 0 {
			s = cut(s, f.max)
		}
	}
	if rf.quoteAll || rf.special(s) {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`, nil
	}
	return s, nil
}

// special reports whether s holds what a field cannot hold unquoted.
func (rf recordFormat) special(s string) bool {
	return strings.IndexByte(s, rf.sep) >= 0 || strings.ContainsAny(s, "\"\r\n")
}

// neutralize makes free text safe in a record and in a spreadsheet: every
// control character (C0, DEL, C1: tab, line breaks, ...) becomes a space,
// and text whose first character other than a space is = + - or @ gets a '
// in front (the OWASP advice against CSV injection). Other text is left as
// it is.
func neutralize(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if t := strings.TrimLeft(s, " "); t != "" && strings.ContainsRune("=+-@", rune(t[0])) {
		return "'" + s
	}
	return s
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
