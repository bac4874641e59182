package consume

import (
	"testing"

	"github.com/segmentio/kafka-go"
)

// TestTrackerCommitsUpToTheLowestUnfinished: messages finish out of order;
// a partition is committed only up to its lowest message not handled yet,
// never backwards, and each partition on its own.
func TestTrackerCommitsUpToTheLowestUnfinished(t *testing.T) {
	t.Parallel()
	msg := func(p int, o int64) kafka.Message { return kafka.Message{Topic: "t", Partition: p, Offset: o} }
	tests := []struct {
		name    string
		fetched []kafka.Message
		done    []kafka.Message
		want    []int64 // the offset committed after each done (the next one to read), -1: no commit
	}{
		{"in order", []kafka.Message{msg(0, 10), msg(0, 11), msg(0, 12)}, []kafka.Message{msg(0, 10), msg(0, 11), msg(0, 12)}, []int64{11, 12, 13}},
		{"a later one first waits for the earlier", []kafka.Message{msg(0, 10), msg(0, 11), msg(0, 12)},
			[]kafka.Message{msg(0, 12), msg(0, 11), msg(0, 10)}, []int64{-1, -1, 13}},
		{"a slow head holds its partition only", []kafka.Message{msg(0, 10), msg(1, 5), msg(0, 11), msg(1, 6)},
			[]kafka.Message{msg(1, 5), msg(0, 11), msg(1, 6), msg(0, 10)}, []int64{6, -1, 7, 12}},
		{"a message delivered twice counts until both are handled", []kafka.Message{msg(0, 10), msg(0, 10), msg(0, 11)},
			[]kafka.Message{msg(0, 10), msg(0, 11), msg(0, 10)}, []int64{-1, -1, 12}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr := newTracker()
			for _, m := range tt.fetched {
				tr.add(m)
			}
			for i, m := range tt.done {
				c, ok := tr.done(m)
				got := int64(-1)
				if ok {
					if c.Partition != m.Partition || c.Topic != m.Topic {
						t.Fatalf("step %d: commit of %s/%d for a message of %s/%d", i, c.Topic, c.Partition, m.Topic, m.Partition)
					}
					got = c.Offset + 1
				}
				if got != tt.want[i] {
					t.Errorf("step %d (offset %d/%d done): committed %d, want %d", i, m.Partition, m.Offset, got, tt.want[i])
				}
			}
		})
	}
}
