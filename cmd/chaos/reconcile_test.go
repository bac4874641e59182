package main

import (
	"fmt"
	"testing"
)

func good(orderNo string, seq int) (orderStatus, invoice) {
	num := fmt.Sprintf("TEST-2026-%06d", seq)
	st := orderStatus{found: true, Status: "invoiced"}
	st.Invoices = append(st.Invoices, struct {
		ID     string `json:"id"`
		Number string `json:"number"`
		Status string `json:"status"`
		Type   string `json:"type"`
	}{ID: orderNo, Number: num, Status: "archived", Type: "invoice"})
	return st, invoice{ID: orderNo, Number: num, Status: "archived", OrderNo: orderNo, Type: "invoice"}
}

func TestReconcile(t *testing.T) {
	t.Parallel()
	type world struct {
		acked    []string
		statuses map[string]orderStatus
		invoices []invoice
	}
	build := func(n int, change func(w *world)) world {
		w := world{statuses: map[string]orderStatus{}}
		for i := 1; i <= n; i++ {
			o := fmt.Sprintf("O-%d", i)
			st, inv := good(o, i)
			w.acked = append(w.acked, o)
			w.statuses[o] = st
			w.invoices = append(w.invoices, inv)
		}
		if change != nil {
			change(&w)
		}
		return w
	}
	tests := []struct {
		name     string
		w        world
		want     figures
		problems int
	}{
		{"all invoiced once, gapless", build(3, nil), figures{Invoiced: 3, Invoices: 3, Ranges: 1}, 0},
		{"an acknowledged order is lost", build(3, func(w *world) {
			delete(w.statuses, "O-2")
			w.invoices = append(w.invoices[:1], w.invoices[2:]...)
		}), figures{Lost: 1, Invoiced: 2, Invoices: 2, Gaps: 1, Ranges: 1}, 2},
		{"an order invoiced twice", build(2, func(w *world) {
			st, inv := good("O-2", 3)
			s := w.statuses["O-2"]
			s.Invoices = append(s.Invoices, st.Invoices[0])
			w.statuses["O-2"] = s
			w.invoices = append(w.invoices, inv)
		}), figures{Invoiced: 1, DuplicateInvoices: 1, Invoices: 3, Ranges: 1}, 1},
		{"a number used twice", build(2, func(w *world) {
			w.invoices[1].Number = w.invoices[0].Number
		}), figures{Invoiced: 2, Invoices: 2, DuplicateNumbers: 1, Ranges: 1}, 1},
		{"a gap in the range", build(3, func(w *world) {
			w.invoices[2].Number = "TEST-2026-000005"
		}), figures{Invoiced: 3, Invoices: 3, Gaps: 2, Ranges: 1}, 1},
		{"an order not archived yet", build(2, func(w *world) {
			s := w.statuses["O-1"]
			s.Invoices[0].Status = "created"
			w.statuses["O-1"] = s
		}), figures{Invoiced: 1, Invoices: 2, Ranges: 1}, 1},
		{"an invoice of an order no client was told of", build(1, func(w *world) {
			_, inv := good("O-X", 2)
			w.invoices = append(w.invoices, inv)
		}), figures{Invoiced: 1, Invoices: 2, Ranges: 1}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, problems, _ := reconcile(tc.w.acked, tc.w.statuses, tc.w.invoices)
			if got != tc.want || len(problems) != tc.problems {
				t.Errorf("got %+v with %d problems %q, want %+v with %d", got, len(problems), problems, tc.want, tc.problems)
			}
		})
	}
}
