package command

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/o2i-service/o2i/internal/outbox"
)

// NewRelay returns the outbox relay of the write side (the "relay" role):
// it publishes the events the commands wrote (command and
// command/invoicing) to the Kafka brokers.
func NewRelay(pool *pgxpool.Pool, brokers []string, reg prometheus.Registerer) *outbox.Relay {
	return &outbox.Relay{Pool: pool, Brokers: brokers, Registerer: reg}
}
