package accounting

import (
	"strings"
	"testing"
)

// TestNeutralize: free text that a spreadsheet would take for a formula
// gets a ' in front, control characters become spaces, other text stays.
func TestNeutralize(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"plain text", "Rechnung RE-2026-000001 Müller", "Rechnung RE-2026-000001 Müller"},
		{"empty", "", ""},
		{"formula", `=HYPERLINK("http://x","klick")`, `'=HYPERLINK("http://x","klick")`},
		{"plus", "+49 30 1234", "'+49 30 1234"},
		{"minus", "-5 Rabatt", "'-5 Rabatt"},
		{"at", "@SUM(A1:A9)", "'@SUM(A1:A9)"},
		{"after spaces", "   =1+1", "'   =1+1"},
		{"after a tab", "\t=cmd|' /C calc'!A0", "' =cmd|' /C calc'!A0"},
		{"after a line break", "\r\n-2", "'  -2"},
		{"only spaces", "   ", "   "},
		{"inside", "Zahlung a=b+c-d@e", "Zahlung a=b+c-d@e"},
		{"line breaks inside", "Zeile 1\r\nZeile 2\nZeile 3", "Zeile 1  Zeile 2 Zeile 3"},
		{"other controls", "a\x00b\x1bc\x7fd\u0085e\u009ff", "a b c d e f"},
		{"quote and separators stay", `Kunde "A";B,C`, `Kunde "A";B,C`},
		{"apostrophe first", "'=x", "'=x"},
	}
	for _, tc := range tests {
		if got := neutralize(tc.in); got != tc.want {
			t.Errorf("%s: neutralize(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
	}
}

// TestFieldEncoding: how each kind of field is written in each format.
// Text is neutralised, identifiers and amounts never; DATEV quotes every
// text and identifier, the tax office's CSV only when needed; an amount
// that would break the record is refused.
func TestFieldEncoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		format recordFormat
		f      field
		want   string // "" with err
		err    bool
	}{
		{"DATEV text", datevFormat, text("Erlöse 19%", 0), `"Erlöse 19%"`, false},
		{"DATEV empty text", datevFormat, text("", 0), `""`, false},
		{"DATEV text formula", datevFormat, text(`=1+2;"x"`, 0), `"'=1+2;""x"""`, false},
		{"DATEV text cut after neutralising", datevFormat, text("-123456789", 5), `"'-123"`, false},
		{"DATEV text line break", datevFormat, text("a\r\nb", 0), `"a  b"`, false},
		{"DATEV identifier kept", datevFormat, ident("-RE;1\"\r\n"), "\"-RE;1\"\"\r\n\"", false},
		{"DATEV identifier formula kept", datevFormat, ident("=FR123"), `"=FR123"`, false},
		{"DATEV amount", datevFormat, plain("1234,50"), "1234,50", false},
		{"DATEV negative amount not neutralised", datevFormat, plain("-5"), "-5", false},
		{"DATEV empty", datevFormat, plain(""), "", false},
		{"DATEV amount with separator", datevFormat, plain("12;3"), "", true},
		{"DATEV amount with quote", datevFormat, plain(`12"`), "", true},
		{"DATEV amount with line break", datevFormat, plain("12\n"), "", true},
		{"CSV identifier", bzstFormat, ident("FR"), "FR", false},
		{"CSV identifier with comma", bzstFormat, ident("12,345"), `"12,345"`, false},
		{"CSV identifier with line break", bzstFormat, ident("1\r\nDE,9"), "\"1\r\nDE,9\"", false},
		{"CSV identifier with quote", bzstFormat, ident(`a"b`), `"a""b"`, false},
		{"CSV identifier with semicolon", bzstFormat, ident("a;b"), "a;b", false},
		{"CSV identifier formula kept", bzstFormat, ident("+123"), "+123", false},
		{"CSV text", bzstFormat, text("@x,y", 0), `"'@x,y"`, false},
		{"CSV amount", bzstFormat, plain("20.00"), "20.00", false},
		{"CSV amount with comma", bzstFormat, plain("20,00"), "", true},
	}
	for _, tc := range tests {
		got, err := tc.format.encode(tc.f)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: encode(%+v) = %q, %v; want %q, error %v", tc.name, tc.f, got, err, tc.want, tc.err)
		}
	}
}

// TestRecordWriterStopsAtTheFirstRefusedField: nothing of a refused record,
// and nothing after it, is written.
func TestRecordWriterStopsAtTheFirstRefusedField(t *testing.T) {
	t.Parallel()
	w := recordWriter{f: bzstFormat}
	w.write(ident("a"), plain("1"))
	w.write(ident("b"), plain("2,5"))
	w.write(ident("c"), plain("3"))
	if w.err == nil || !strings.Contains(w.err.Error(), "field 2") {
		t.Errorf("error %v, want one naming field 2", w.err)
	}
	if got := w.buf.String(); got != "a,1\r\n" {
		t.Errorf("written %q, want only the first record", got)
	}
}
