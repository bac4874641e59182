package readmodel

import (
	"context"
	"encoding/json"

	"github.com/redis/go-redis/v9"
)

// ChangesChannel is the Redis pub/sub channel on which projectors announce
// which order status records they rewrote, so that API processes can drop
// what they hold in memory (see query's near cache).
const ChangesChannel = "o2i:order-changes"

// Change names one rewritten record and its new revision.
type Change struct {
	ProjectID string `json:"p"`
	OrderNo   string `json:"o"`
	Rev       int64  `json:"r"`
}

// PublishChanges queues one message announcing changes on the pipeline.
func PublishChanges(ctx context.Context, p redis.Pipeliner, changes []Change) {
	if len(changes) == 0 {
		return
	}
	raw, err := json.Marshal(changes)
	if err != nil {
		return
	}
	p.Publish(ctx, ChangesChannel, raw)
}

// ParseChanges reads a message of PublishChanges.
func ParseChanges(payload string) ([]Change, error) {
	var out []Change
	err := json.Unmarshal([]byte(payload), &out)
	return out, err
}
