package render

import "testing"

func TestGermanDecimal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in string
		minFrac  int
		want     string
	}{
		{"amount", "1234.56", 2, "1.234,56"},
		{"negative amount", "-402.10", 2, "-402,10"},
		{"millions", "1234567.00", 2, "1.234.567,00"},
		{"whole price padded", "149", 2, "149,00"},
		{"one decimal padded", "39.9", 2, "39,90"},
		{"more decimals kept", "27.303333", 2, "27,303333"},
		{"exact thousand", "1000", 2, "1.000,00"},
		{"small negative", "-0.5", 2, "-0,50"},
		{"quantity", "2.5", 0, "2,5"},
		{"whole quantity", "3", 0, "3"},
		{"negative quantity", "-12000", 0, "-12.000"},
		{"rate", "5.5", 0, "5,5"},
		{"zero", "0", 0, "0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := germanDecimal(c.in, c.minFrac)
			if err != nil || got != c.want {
				t.Errorf("germanDecimal(%q, %d) = %q, %v; want %q", c.in, c.minFrac, got, err, c.want)
			}
		})
	}
	for _, bad := range []string{"", "-", "1,50", "1.", ".5", "+1", "1e3", "1.2.3", " 1", "1 000", "--1", "NaN"} {
		if got, err := germanDecimal(bad, 2); err == nil {
			t.Errorf("germanDecimal(%q) = %q, want an error", bad, got)
		}
	}
}

func TestReadViewTitles(t *testing.T) {
	t.Parallel()
	samples, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"380": "Rechnung", "381": "Stornorechnung", "384": "Rechnungskorrektur"}
	seen := map[string]bool{}
	for _, s := range samples {
		for _, d := range s.Documents {
			v, err := readView(d.XML, false)
			if err != nil {
				t.Fatalf("%s: %v", s.Scenario.Name, err)
			}
			code := string(d.Invoice.TypeCode)
			seen[code] = true
			if v.Title != want[code] {
				t.Errorf("%s: type %s titled %q, want %q", s.Scenario.Name, code, v.Title, want[code])
			}
			if (code != "380") != (v.Preceding != "") {
				t.Errorf("%s: type %s with preceding invoice %q", s.Scenario.Name, code, v.Preceding)
			}
			if v.Test != d.Invoice.Test {
				t.Errorf("%s: test %v, want %v", s.Scenario.Name, v.Test, d.Invoice.Test)
			}
		}
	}
	for code := range want {
		if !seen[code] {
			t.Errorf("no sample of type %s", code)
		}
	}
}

// TestReadViewBankTransfer: a provider bank transfer's account (IBAN, holder)
// and reference reach the PDF's payment block.
func TestReadViewBankTransfer(t *testing.T) {
	t.Parallel()
	samples, err := Samples()
	if err != nil {
		t.Fatal(err)
	}
	inv := samples[0].Documents[0].Invoice
	inv.Payment.Code, inv.Payment.IBAN, inv.Payment.AccountName, inv.Payment.Reference = "58", "DE36100100100000000001", "Stripe Payments Europe Limited", "AK40SLQJDCVQ"
	xml, err := CII(inv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := readView(xml, false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range v.Payment {
		got[l.Label] = l.Value
	}
	for label, want := range map[string]string{"IBAN": "DE36100100100000000001", "Kontoinhaber": "Stripe Payments Europe Limited", "Verwendungszweck": "AK40SLQJDCVQ"} {
		if got[label] != want {
			t.Errorf("%s = %q, want %q (payment block %v)", label, got[label], want, v.Payment)
		}
	}
}
