package billing

import "testing"

// itemIndex reads back the source that itemDraft writes for a line.
func TestItemIndex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		source string
		want   int
		ok     bool
	}{
		{"items[0]", 0, true},
		{"items[17]", 17, true},
		{"items[499]", 499, true},
		{"shippingNetCents", 0, false},
		{"shippingGrossCents", 0, false},
		{"", 0, false},
		{"items[]", 0, false},
		{"items[-1]", 0, false},
		{"items[2].quantity", 0, false},
		{"items[x]", 0, false},
		{"other[3]", 0, false},
	} {
		got, ok := itemIndex(c.source)
		if got != c.want || ok != c.ok {
			t.Errorf("itemIndex(%q) = %d, %v, want %d, %v", c.source, got, ok, c.want, c.ok)
		}
	}
}
