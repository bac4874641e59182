package accounting_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/o2i-service/o2i/internal/accounting"
)

func stream(bs ...accounting.Booking) accounting.Stream {
	return func() (accounting.Booking, bool, error) {
		if len(bs) == 0 {
			return accounting.Booking{}, false, nil
		}
		b := bs[0]
		bs = bs[1:]
		return b, true, nil
	}
}

// TestMergeKeepsBookingsOrder: streams each in order merge into the order
// Bookings sorts: date (the instant), then document bytewise, then the
// stream given first.
func TestMergeKeepsBookingsOrder(t *testing.T) {
	day := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	noon := day.Add(12 * time.Hour)
	b := func(at time.Time, doc, text string) accounting.Booking {
		return accounting.Booking{Date: at, Document: doc, Text: text}
	}
	for _, tc := range []struct {
		name    string
		streams [][]accounting.Booking
		want    string
	}{
		{"by date first", [][]accounting.Booking{{b(noon, "A", "a")}, {b(day, "Z", "z")}}, "z a"},
		{"then document bytewise", [][]accounting.Booking{{b(day, "RE-2", "two")}, {b(day, "RE-10", "ten")}}, "ten two"},
		{"then the earlier stream", [][]accounting.Booking{{b(day, "RE-1", "doc")}, {b(day, "RE-1", "pay")}, {b(day, "RE-1", "refund")}}, "doc pay refund"},
		{"a stream keeps its own order on ties", [][]accounting.Booking{{b(day, "RE-1", "1"), b(day, "RE-1", "2")}, {b(day, "RE-1", "3")}}, "1 2 3"},
		{"the empty document first", [][]accounting.Booking{{b(noon, "RE-1", "doc")}, {b(noon, "", "none")}}, "none doc"},
		{"empty streams", [][]accounting.Booking{{}, {b(day, "A", "a")}, {}}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ss []accounting.Stream
			for _, s := range tc.streams {
				ss = append(ss, stream(s...))
			}
			var got []string
			if err := accounting.Merge(func(b accounting.Booking) error { got = append(got, b.Text); return nil }, ss...); err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("got %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}

// TestDATEVWriterWritesWhatWriteDATEVWrites: the file written booking by
// booking is the file written at once, and a booking refused leaves the
// records before it written.
func TestDATEVWriterWritesWhatWriteDATEVWrites(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	h := accounting.Header{Consultant: 1001, Client: 1, FiscalYearStart: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), From: from, To: to,
		Created: from, Label: "Test"}
	bs := []accounting.Booking{
		{Date: from, Cents: 11900, Debit: "10000", Credit: "8400", Document: "RE-1", Text: "Rechnung Größe"},
		{Date: to, Cents: 500, Debit: "1360", Credit: "10000", Document: "RE-1", Text: "=Zahlung"},
	}
	var whole, streamed bytes.Buffer
	if err := accounting.WriteDATEV(&whole, h, bs); err != nil {
		t.Fatal(err)
	}
	dw, err := accounting.NewDATEVWriter(&streamed, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if err := dw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(whole.Bytes(), streamed.Bytes()) {
		t.Errorf("streamed file differs:\n%q\n%q", streamed.String(), whole.String())
	}
	n := streamed.Len()
	if err := dw.Write(accounting.Booking{Date: to, Cents: 1, Debit: "13;60", Credit: "10000"}); err == nil {
		t.Error("an account holding the separator was written")
	}
	if streamed.Len() != n {
		t.Error("a refused booking wrote something")
	}
}
