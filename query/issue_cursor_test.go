package query

import (
	"testing"
	"time"
)

// The position of a listing in the order of issue survives its packing
// into the cursor's one number.
func TestIssueSeqPacking(t *testing.T) {
	for _, c := range []struct {
		day string
		seq int64
	}{
		{"1970-01-01", 0}, {"2026-11-25", 1}, {"2026-12-31", 123_456_789}, {"2099-06-30", 1<<issueSeqBits - 1}, {"9999-12-31", 42},
	} {
		day, _ := time.Parse(time.DateOnly, c.day)
		gotDay, gotSeq := unpackIssueSeq(packIssueSeq(day, c.seq))
		if !gotDay.Equal(day) || gotSeq != c.seq {
			t.Errorf("%s/%d: unpacked %s/%d", c.day, c.seq, gotDay.Format(time.DateOnly), gotSeq)
		}
	}
	a, _ := time.Parse(time.DateOnly, "2026-03-01")
	b, _ := time.Parse(time.DateOnly, "2026-03-02")
	if packIssueSeq(a, 1<<issueSeqBits-1) >= packIssueSeq(b, 0) {
		t.Error("a later day does not pack to a larger number")
	}
}
